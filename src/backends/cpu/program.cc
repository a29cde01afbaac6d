#include "backends/cpu/program.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/dump_flags.h"
#include "base/fingerprint.h"
#include "base/status.h"
#include "hlo/proto_codec.h"
#include "passes/dump.h"
#include "passes/pipeline.h"

#ifndef XONNX_VERSION
#define XONNX_VERSION "0.0.0"
#endif

namespace xonnx::cpu {

namespace {

// The fifth version adds the blocked-layouts flag to the options line.
constexpr char kSerializedMagic[] = "XONNX-CPU-EXECUTABLE-4";
// Executables kept per program, one per set of weight buffers: a session
// keeps one set, and a second covers a weight update in flight.
constexpr size_t kSpecializationCacheSize = 2;

// Compiles `m`; `run_passes` runs the standard pipeline first (needed after
// weights were bound as constants, not for a module already optimized).
absl::StatusOr<std::shared_ptr<Executable>> CompileBackend(std::unique_ptr<hlo::Module> m, const ProgramOptions& o,
                                                           bool run_passes) {
  // XONNX_FLAGS' dumps: the module as it arrives, after the passes named,
  // and as the backend runs it.
  std::unique_ptr<passes::Dumper> dumper;
  if (const DumpSettings& dump = DumpSettingsFromEnv(); dump.enabled()) {
    dumper = std::make_unique<passes::Dumper>(dump, absl::StrCat(m->name(), "-cpu"));
    dumper->Dump(*m, "received", /*always=*/true);
  }
  if (run_passes && o.optimize)
    RETURN_IF_ERROR(
        passes::RunStandardPipeline(m.get(), o.verify_passes, /*integer_products=*/!o.compile.reference, dumper.get()));
  ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, Executable::Compile(std::move(m), o.compile, dumper.get()));
  if (dumper) dumper->Dump(exe->module(), "final", /*always=*/true);
  return std::shared_ptr<Executable>(std::move(exe));
}

absl::Status CheckRowMajorShape(const hlo::Shape& s, const std::string& what) {
  if (!s.IsArray()) return absl::UnimplementedError(absl::StrCat(what, " has type ", s.ToString(), "; arrays only"));
  if (!s.minor_to_major.empty() && s.minor_to_major != hlo::DefaultLayout(s.rank()))
    return absl::UnimplementedError(
        absl::StrCat(what, " has layout ", s.ToString(), "; only row-major layouts are supported"));
  return absl::OkStatus();
}

// The entry's parameter shapes, and which parameters are weights (ascending).
absl::Status EntryParams(const hlo::Module& m, std::vector<hlo::Shape>* shapes, std::vector<int>* weights) {
  const hlo::Computation* entry = m.entry();
  for (int64_t k = 0; k < entry->num_parameters(); ++k) {
    const hlo::Instruction* param = entry->parameter(k);
    if (!param) return InvalidArgument("entry parameter %d is missing", k);
    shapes->push_back(param->shape());
    if (param->metadata.op_type == hlo::kWeightParameterOpType) weights->push_back(static_cast<int>(k));
  }
  return absl::OkStatus();
}

std::string OptionFlags(const ProgramOptions& o) {
  const CompileOptions& c = o.compile;
  return absl::StrCat(o.optimize ? 1 : 0, c.use_dnnl ? 1 : 0, c.fuse_elementwise ? 1 : 0, c.winograd ? 1 : 0,
                      c.blocked_layouts ? 1 : 0, c.reference ? 1 : 0, c.concurrent_branches ? 1 : 0,
                      c.distinct_buffers ? 1 : 0, c.excess_precision ? 1 : 0, ":", c.batch_rows);
}

}  // namespace

// What a program takes and returns, from its entry's parameter shapes
// (`weights`: the parameter numbers that are weights) and result shape.
absl::Status Program::SetSignature(std::vector<hlo::Shape> params, const std::vector<int>& weights,
                                   const hlo::Shape& result) {
  std::set<int> weight_set(weights.begin(), weights.end());
  for (int w : weight_set)
    if (w < 0 || w >= static_cast<int>(params.size())) return InvalidArgument("weight parameter %d does not exist", w);
  for (size_t k = 0; k < params.size(); ++k) {
    RETURN_IF_ERROR(CheckRowMajorShape(params[k], absl::StrCat("parameter ", k)));
    (weight_set.count(k) ? weight_params_ : other_params_).push_back(static_cast<int>(k));
  }
  param_shapes_ = std::move(params);
  tuple_result_ = result.IsTuple();
  if (result.IsTuple())
    output_shapes_ = result.tuple_shapes;
  else
    output_shapes_ = {result};
  for (size_t k = 0; k < output_shapes_.size(); ++k)
    RETURN_IF_ERROR(CheckRowMajorShape(output_shapes_[k], absl::StrCat("output ", k)));
  return absl::OkStatus();
}

std::string Program::Fingerprint(int device_id) const {
  Fingerprinter f;
  f.UpdateField(module_bytes_);
  f.UpdateField(absl::StrCat(device_id, OptionFlags(options_), XONNX_VERSION));
  return f.Finish().Hex();
}

// Gives the program its decoded module, compiling it now when it has no
// weights (one with weights compiles per set of weight buffers).
absl::Status Program::InstallModule(std::unique_ptr<hlo::Module> m) {
  // Input/output aliases are not honoured here: this backend reads its
  // inputs in place (often the caller's own memory) and never writes them,
  // and a result always gets buffers of its own.
  m->set_aliases({});
  if (weight_params_.empty()) {
    ASSIGN_OR_RETURN(generic_, CompileBackend(m->Clone(), options_, /*run_passes=*/false));
  }
  module_ = std::move(m);
  return absl::OkStatus();
}

// The standard pipeline runs once per program on this side: here for a
// program without weights, which compiles now; after binding for one with
// weights (Specialize), where the weights' values let it fold far more.
absl::StatusOr<std::shared_ptr<Program>> Program::Build(absl::string_view module_bytes, const ProgramOptions& o) {
  ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> m, hlo::ParseModule(module_bytes));
  std::shared_ptr<Program> p(new Program);
  p->options_ = o;
  p->name_ = m->name();
  std::vector<hlo::Shape> params;
  std::vector<int> weights;
  RETURN_IF_ERROR(EntryParams(*m, &params, &weights));
  if (weights.empty() && o.optimize)
    RETURN_IF_ERROR(passes::RunStandardPipeline(m.get(), o.verify_passes, /*integer_products=*/!o.compile.reference));
  RETURN_IF_ERROR(p->SetSignature(std::move(params), weights, m->entry()->root()->shape()));
  p->module_bytes_ = weights.empty() ? hlo::SerializeModule(*m) : std::string(module_bytes);
  RETURN_IF_ERROR(p->InstallModule(std::move(m)));
  return p;
}

// Decodes a deserialized program's module at its first run (mu_ held),
// checks it against the signature it was loaded with, and compiles it when
// it has no weights.
absl::Status Program::DecodeModule() {
  if (module_) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> m, hlo::ParseModule(module_bytes_));
  std::vector<hlo::Shape> params;
  std::vector<int> weights;
  bool same =
      EntryParams(*m, &params, &weights).ok() && params.size() == param_shapes_.size() && weights == weight_params_;
  for (size_t k = 0; same && k < params.size(); ++k) same = params[k].Compatible(param_shapes_[k]);
  if (!same) return absl::DataLossError("the serialized program's module does not match its signature");
  return InstallModule(std::move(m));
}

// The program with the weight parameters bound to these buffers' values.
absl::StatusOr<std::shared_ptr<Executable>> Program::Specialize(absl::Span<const WeightArg> weights) {
  std::unique_ptr<hlo::Module> m = module_->Clone();
  std::vector<std::pair<int64_t, hlo::Literal>> values;
  for (size_t w = 0; w < weight_params_.size(); ++w) {
    // Buffers never change, so the constant reads the buffer's bytes: no
    // copy per program, and the backend recognizes the same weight in every
    // program that binds it (its packed form is shared).
    values.emplace_back(weight_params_[w],
                        hlo::Literal::Borrow(param_shapes_[weight_params_[w]], weights[w].data, weights[w].owner));
  }
  RETURN_IF_ERROR(m->BindParameters(std::move(values)));
  return CompileBackend(std::move(m), options_, /*run_passes=*/true);
}

absl::StatusOr<std::shared_ptr<Executable>> Program::ExecutableFor(absl::Span<const WeightArg> weights) {
  if (weights.size() != weight_params_.size())
    return InvalidArgument("the program has %d weights, %d given", weight_params_.size(), weights.size());
  std::lock_guard<std::mutex> l(mu_);
  RETURN_IF_ERROR(DecodeModule());
  if (weight_params_.empty()) return generic_;
  std::vector<uint64_t> key;
  for (const WeightArg& w : weights) key.push_back(w.id);
  for (auto it = specialized_.begin(); it != specialized_.end(); ++it)
    if (it->first == key) {
      specialized_.splice(specialized_.begin(), specialized_, it);
      return it->second;
    }
  ASSIGN_OR_RETURN(std::shared_ptr<Executable> exe, Specialize(weights));
  specialized_.emplace_front(key, exe);
  if (specialized_.size() > kSpecializationCacheSize) specialized_.pop_back();
  return exe;
}

// Serialized form: lines with the magic, the version, the device, the
// option flags, the weight parameter numbers, the sizes of the signature
// and of the name, and the module's fingerprint; then the signature (a
// ProgramShapeProto), the program's name and the module, already optimized.
// Only the same version reads it back. Loading a cached bucket therefore
// costs microseconds, and buckets that never run never pay for decoding.
std::string Program::Serialize(int device_id) const {
  wire::ProgramShapeProto sig;
  for (const auto& s : param_shapes_) *sig.add_parameters() = hlo::ShapeToProto(s);
  *sig.mutable_result() = hlo::ShapeToProto(tuple_result_ ? hlo::Shape::Tuple(output_shapes_) : output_shapes_.at(0));
  std::string sig_bytes = sig.SerializeAsString();
  return absl::StrCat(kSerializedMagic, "\n", XONNX_VERSION, "\n", device_id, "\n", OptionFlags(options_), "\n",
                      absl::StrJoin(weight_params_, ","), "\n", sig_bytes.size(), " ", name_.size(), "\n",
                      FingerprintOf(module_bytes_).Hex(), "\n", sig_bytes, name_, module_bytes_);
}

absl::StatusOr<std::shared_ptr<Program>> Program::Deserialize(absl::string_view bytes, const ProgramOptions& defaults,
                                                              int* device_id) {
  auto bad = [](absl::string_view why) { return absl::InvalidArgumentError(why); };
  std::vector<absl::string_view> header;
  size_t pos = 0;
  for (int k = 0; k < 7; ++k) {
    size_t nl = bytes.find('\n', pos);
    if (nl == absl::string_view::npos) return bad("not an executable serialized by the xonnx CPU plugin");
    header.push_back(bytes.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (header[0] != kSerializedMagic) return bad("not an executable serialized by this version of the xonnx CPU plugin");
  if (header[1] != XONNX_VERSION)
    return bad(absl::StrCat("serialized by xonnx ", header[1], ", this plugin is ", XONNX_VERSION));
  size_t sig_size = 0, name_size = 0;
  std::vector<absl::string_view> sizes = absl::StrSplit(header[5], ' ');
  // Nine switches (six before concurrent_branches, seven before
  // distinct_buffers, eight before excess_precision), then ':' and the
  // batch rows (OptionFlags).
  std::vector<absl::string_view> option_parts = absl::StrSplit(header[3], ':');
  absl::string_view flags = option_parts[0];
  int64_t batch_rows = 0;
  if (option_parts.size() != 2 || !absl::SimpleAtoi(option_parts[1], &batch_rows) || batch_rows < 0)
    return bad("corrupt header");
  if (!absl::SimpleAtoi(header[2], device_id) || flags.size() < 6 || flags.size() > 9 || sizes.size() != 2 ||
      !absl::SimpleAtoi(sizes[0], &sig_size) || !absl::SimpleAtoi(sizes[1], &name_size) ||
      sig_size > bytes.size() - pos || name_size > bytes.size() - pos - sig_size)
    return bad("corrupt header");
  std::vector<int> weights;
  for (absl::string_view w : absl::StrSplit(header[4], ',', absl::SkipEmpty())) {
    int k;
    if (!absl::SimpleAtoi(w, &k)) return bad("corrupt header");
    weights.push_back(k);
  }
  absl::string_view module = bytes.substr(pos + sig_size + name_size);
  if (FingerprintOf(module).Hex() != header[6]) return bad("the module is damaged (fingerprint mismatch)");
  wire::ProgramShapeProto sig;
  if (!sig.ParseFromArray(bytes.data() + pos, static_cast<int>(sig_size))) return bad("corrupt signature");
  ProgramOptions o = defaults;
  o.optimize = flags[0] == '1';
  o.compile.use_dnnl = flags[1] == '1';
  o.compile.fuse_elementwise = flags[2] == '1';
  o.compile.winograd = flags[3] == '1';
  o.compile.blocked_layouts = flags[4] == '1';
  o.compile.reference = flags[5] == '1';
  o.compile.concurrent_branches = flags.size() < 7 || flags[6] == '1';
  o.compile.distinct_buffers = flags.size() >= 8 && flags[7] == '1';
  // Before the switch, half-precision programs kept excess precision.
  o.compile.excess_precision = flags.size() < 9 || flags[8] == '1';
  o.compile.batch_rows = batch_rows;
  std::shared_ptr<Program> p(new Program);
  p->options_ = o;
  p->name_ = std::string(bytes.substr(pos + sig_size, name_size));
  std::vector<hlo::Shape> params;
  for (const auto& sp : sig.parameters()) {
    auto shape = hlo::ShapeFromProto(sp);
    if (!shape.ok()) return bad(absl::StrCat("corrupt signature: ", shape.status().message()));
    params.push_back(*std::move(shape));
  }
  auto result = hlo::ShapeFromProto(sig.result());
  if (!result.ok()) return bad(absl::StrCat("corrupt signature: ", result.status().message()));
  RETURN_IF_ERROR(p->SetSignature(std::move(params), weights, *result));
  p->module_bytes_ = std::string(module);
  return p;
}

}  // namespace xonnx::cpu
