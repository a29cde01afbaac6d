// `xonnx run --compare reference` and `--expect DIR`: the outputs against
// the reference device's (xonnx's CPU plugin with create option
// reference=true, every instruction on the reference evaluator) or against
// expected output files, each output's distance from them.
#include <cmath>
#include <cstring>
#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/cli.h"

namespace xonnx::cli {

namespace {

// The tensor's values as doubles (Tensor::GetAsDouble, but float64 read
// exactly: GetAsDouble rounds it through float32); false for strings.
bool AsDoubles(const xonnx::Tensor& t, std::vector<double>* out) {
  if (t.dtype() == xonnx::DataType::kString) return false;
  out->resize(t.element_count());
  for (int64_t i = 0; i < t.element_count(); ++i)
    (*out)[i] = t.dtype() == xonnx::DataType::kFloat64 ? t.data_as<double>()[i] : t.GetAsDouble(i);
  return true;
}

// The largest absolute difference of `a` from `b`, and the relative L2
// error (NaN against NaN counts as equal).
std::pair<double, double> Distance(const std::vector<double>& a, const std::vector<double>& b) {
  double diff2 = 0, ref2 = 0, max_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = a[i] - b[i];
    if (std::isnan(a[i]) && std::isnan(b[i])) d = 0;
    diff2 += d * d;
    ref2 += b[i] * b[i];
    max_abs = std::max(max_abs, std::abs(d));
  }
  return {max_abs, ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2)};
}

}  // namespace

std::vector<xonnx::Tensor> RunOnReference(const std::string& model, const std::map<std::string, xonnx::Tensor>& inputs,
                                          bool expose_intermediates) {
  xonnx::SessionOptions o = BaseOptions();
  o.plugin = "cpu";
  o.device = 0;
  o.create_options = {{"reference", true}};
  o.use_cache = false;
  o.profile_file.clear();
  o.dump = {};
  o.expose_intermediates = expose_intermediates;
  auto ref_session = Check(xonnx::Session::Open(model, o));
  return Check(ref_session->Run(inputs));
}

std::vector<xonnx::Tensor> RunWithDistinctBuffers(const std::string& model,
                                                  const std::map<std::string, xonnx::Tensor>& inputs) {
  xonnx::SessionOptions o = BaseOptions();
  if (!o.plugin.empty() && o.plugin != "cpu")
    throw CliError{"--compare buffers runs on xonnx's CPU plugin only (it has no such switch for --plugin " + o.plugin +
                   ")"};
  o.create_options.push_back({"distinct_buffers", true});
  o.use_cache = false;
  o.profile_file.clear();
  o.dump = {};
  auto session = Check(xonnx::Session::Open(model, o));
  return Check(session->Run(inputs));
}

int CompareOutputs(const std::vector<xonnx::Tensor>& outs, const std::vector<xonnx::Tensor>& ref,
                   const std::vector<xonnx::TensorSpec>& specs, double tolerance, const std::string& against) {
  int differing = 0;
  for (size_t k = 0; k < outs.size() && k < ref.size(); ++k) {
    std::vector<double> a, b;
    if (outs[k].dims() != ref[k].dims()) {
      std::cout << absl::StrFormat("compare %s: shape [%s] against %s [%s]: DIFFERS\n", specs[k].name,
                                   absl::StrJoin(outs[k].dims(), ","), against, absl::StrJoin(ref[k].dims(), ","));
      ++differing;
      continue;
    }
    if (!AsDoubles(outs[k], &a) || !AsDoubles(ref[k], &b)) {
      bool same = outs[k].dtype() == ref[k].dtype() && outs[k].strings() == ref[k].strings() &&
                  outs[k].byte_size() == ref[k].byte_size() &&
                  (outs[k].byte_size() == 0 || std::memcmp(outs[k].data(), ref[k].data(), outs[k].byte_size()) == 0);
      std::cout << absl::StrFormat("compare %s: %s\n", specs[k].name, same ? "identical" : "DIFFERS");
      differing += !same;
      continue;
    }
    auto [max_abs, rel] = Distance(a, b);
    bool ok = !(rel > tolerance);  // a NaN is a difference
    differing += !ok;
    std::cout << absl::StrFormat("compare %s: max |diff| %.3g, relative L2 %.3g against %s: %s\n", specs[k].name,
                                 max_abs, rel, against, ok ? "ok" : "DIFFERS");
  }
  return differing;
}

void ReportFirstDifference(const std::string& model, const std::map<std::string, xonnx::Tensor>& inputs,
                           size_t model_outputs, double tolerance) {
  xonnx::SessionOptions o = BaseOptions();
  o.expose_intermediates = true;
  o.profile_file.clear();
  o.dump = {};
  auto session = xonnx::Session::Open(model, o);
  if (!session.ok()) {
    std::cout << "first difference: cannot expose the intermediate values: " << session.status().message() << "\n";
    return;
  }
  std::vector<xonnx::Tensor> outs = Check((*session)->Run(inputs));
  std::vector<xonnx::Tensor> ref = RunOnReference(model, inputs, /*expose_intermediates=*/true);
  const auto& specs = (*session)->outputs();
  size_t compared = 0;
  for (size_t k = model_outputs; k < outs.size() && k < ref.size(); ++k) {
    std::vector<double> a, b;
    if (outs[k].dims() != ref[k].dims() || !AsDoubles(outs[k], &a) || !AsDoubles(ref[k], &b)) continue;
    ++compared;
    auto [max_abs, rel] = Distance(a, b);
    if (rel > tolerance || std::isnan(rel)) {
      std::cout << absl::StrFormat(
          "first difference: value '%s' (%d of %d in node order): max |diff| %.3g, relative L2 %.3g against the "
          "reference device\n",
          specs[k].name, k - model_outputs + 1, outs.size() - model_outputs, max_abs, rel);
      return;
    }
  }
  std::cout << absl::StrFormat(
      "first difference: none of the %d intermediate values compared differs beyond %.3g; the outputs' own last "
      "steps do\n",
      compared, tolerance);
}

}  // namespace xonnx::cli
