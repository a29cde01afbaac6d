// The steps behind Session::Open() and Run(): bucketed and split calls,
// compiling every bucket up front, and the options a model cannot honour.
#include "runtime/session_impl.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/batching.h"
#include "runtime/dtype.h"

namespace xonnx {

absl::StatusOr<std::vector<Tensor>> Session::Impl::RunRows(const std::map<std::string, Tensor>& all, int64_t begin,
                                                           int64_t rows, int64_t total, int dev,
                                                           const CallBounds& bounds) {
  int64_t padded = buckets.PaddedRows(rows);
  bool whole_batch = begin == 0 && rows == total && padded == rows;
  if (whole_batch && !buckets.has_dim_buckets()) return runner->RunExact(all, dev, nullptr, nullptr, &bounds);
  std::map<std::string, Tensor> part;
  for (const auto& s : inputs) {
    const Tensor& t = all.at(s.name);
    if (!Buckets::IsBatched(s) || whole_batch) {
      part[s.name] = t;
      continue;
    }
    ASSIGN_OR_RETURN(Tensor p, SliceRows(t, begin, rows));
    if (padded != rows) {
      ASSIGN_OR_RETURN(p, ResizeAxis(p, 0, padded));
    }
    part[s.name] = std::move(p);
  }
  auto actual_or = buckets.PadDims(part);
  if (!actual_or.ok()) return actual_or.status();
  const std::map<std::string, int64_t>& actual = *actual_or;
  ASSIGN_OR_RETURN(std::vector<Tensor> outs, runner->RunExact(part, dev, nullptr, nullptr, &bounds));
  RETURN_IF_ERROR(buckets.CutDims(outs, actual));
  if (padded != rows)
    for (size_t k = 0; k < outs.size(); ++k)
      if (buckets.BatchedOutput(k, outs[k], padded)) {
        ASSIGN_OR_RETURN(outs[k], ResizeAxis(outs[k], 0, rows));
      }
  return outs;
}

absl::Status Session::Impl::CompileBuckets() {
  if (buckets.empty() || !unsupported.empty()) return absl::OkStatus();
  // Shapes only: a bucket is converted and compiled without input values.
  std::optional<std::vector<ShapeMap>> all = buckets.AllShapes();
  if (!all) return absl::OkStatus();  // compiled on first use
  const std::vector<ShapeMap>& shapes = *all;
  const int devices = num_devices();
  int total = shapes.size() * devices;
  int threads =
      options.compile_threads > 0 ? options.compile_threads : std::max(1u, std::thread::hardware_concurrency());
  // Programs first (converted and compiled, or loaded from the cache), then
  // the weights they take, uploaded once for all of them: the two phases
  // are timed apart, since only the first depends on the compiler.
  auto start = std::chrono::steady_clock::now();
  std::vector<std::optional<ModelRunner::Prepared>> prepared(total);
  std::mutex progress_mu;
  int done = 0;
  // A program that depends on input values (FailedPrecondition) stops the
  // eager compile without an error: it compiles on first use, for the
  // values given.
  absl::Status first_error;
  pool->ParallelFor(total, threads, [&](int k) {
    auto p = runner->Prepare(shapes[k / devices], nullptr, k % devices, /*eager=*/true, nullptr);
    std::lock_guard<std::mutex> l(progress_mu);
    if (!p.ok()) {
      if (!absl::IsFailedPrecondition(p.status()) && first_error.ok()) first_error = p.status();
      return false;
    }
    prepared[k] = *std::move(p);
    ++done;
    if (options.compile_progress) options.compile_progress(done, total);
    return true;
  });
  if (!first_error.ok()) return first_error;
  double buckets_ms = MsSince(start);
  start = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, int>> wanted;
  {
    std::set<std::pair<std::string, int>> seen;
    for (int k = 0; k < total; ++k)
      if (prepared[k] && !prepared[k]->kept)
        for (const auto& w : prepared[k]->program.weight_names)
          if (seen.insert({w, k % devices}).second) wanted.emplace_back(w, k % devices);
  }
  pool->ParallelFor(wanted.size(), threads, [&](int k) {
    absl::Status st = runner->UploadWeight(wanted[k].first, wanted[k].second);
    std::lock_guard<std::mutex> l(progress_mu);
    if (!st.ok() && first_error.ok()) first_error = st;
    return st.ok();
  });
  if (!first_error.ok()) return first_error;
  for (int k = 0; k < total; ++k)
    if (prepared[k]) RETURN_IF_ERROR(runner->Complete(*std::move(prepared[k]), k % devices).status());
  runner->programs().NoteBucketTimes(buckets_ms, MsSince(start));
  return absl::OkStatus();
}

absl::Status Session::Impl::CheckSplitOptions() const {
  if (!stages.split()) return absl::OkStatus();
  std::string what, why;
  if (!buckets.empty()) {
    what = "batch or dimension buckets";
    why = "padding rows would reach what is computed there and change it";
  } else if (num_devices() > 1) {
    what = "running on all devices";
    why = "each device's share of the batch would reach what is computed there alone and change it";
  } else if (options.io_data_type != DataType::kFloat32) {
    what = absl::StrCat("io_data_type ", DataTypeName(options.io_data_type));
    why = "the values passed between its parts are float32 (data_type still applies)";
  }
  if (what.empty()) return absl::OkStatus();
  return InvalidArgument("%s: %s cannot be used with this model: its graph %s; %s", path(), what,
                         stages.Description(runner->model()), why);
}

absl::Status Session::Impl::CheckValueOptions() const {
  if (!value_io) return absl::OkStatus();
  if (!buckets.empty() || num_devices() > 1)
    return InvalidArgument(
        "%s: buckets and all devices cannot be used with a model whose inputs or outputs are "
        "sequences or optionals",
        path());
  if (stages.split())
    return Unimplemented("%s: a model with sequence or optional inputs or outputs whose graph %s is not supported",
                         path(), stages.Description(runner->model()));
  return absl::OkStatus();
}

absl::Status Session::Impl::CheckInputs(const std::map<std::string, Tensor>& given) const {
  const std::string& file = path();
  RETURN_IF_ERROR(CheckInputNames(given));
  for (const auto& s : inputs) {
    auto it = given.find(s.name);
    if (it == given.end()) return InvalidArgument("%s: input '%s' is missing from the call", file, s.name);
    const Tensor& t = it->second;
    if (t.dtype() != s.dtype)
      return InvalidArgument("%s: input '%s' has type %s, the model expects %s", file, s.name, DataTypeName(t.dtype()),
                             DataTypeName(s.dtype));
    bool dims_ok = s.dims.empty() || t.dims().size() == s.dims.size();
    for (size_t d = 0; dims_ok && !s.dims.empty() && d < s.dims.size(); ++d)
      dims_ok = s.dims[d] < 0 || s.dims[d] == t.dims()[d];
    if (!dims_ok) {
      std::vector<std::string> want;
      for (size_t d = 0; d < s.dims.size(); ++d)
        want.push_back(s.dims[d] >= 0 ? absl::StrCat(s.dims[d]) : (s.dim_names[d].empty() ? "?" : s.dim_names[d]));
      return InvalidArgument("%s: input '%s' has shape [%s], the model expects [%s]", file, s.name,
                             absl::StrJoin(t.dims(), ","), absl::StrJoin(want, ","));
    }
  }
  return absl::OkStatus();
}

}  // namespace xonnx
