// Compiles an hlo::Module into an Executable. The stages, in order: the
// backend's passes (half precision upcast, channels-last layouts), the
// planners (oneDNN epilogues and layouts, row and elementwise fusions, dot
// views) writing one Plan, buffer assignment over the plan, and thunk
// emission from the kernel table. This file only sequences them.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "backends/cpu/canonicalization/axis_maps.h"
#include "backends/cpu/canonicalization/conv_canonicalization.h"
#include "backends/cpu/canonicalization/dot_canonicalization.h"
#include "backends/cpu/canonicalization/dot_of_concatenate.h"
#include "backends/cpu/canonicalization/layout_pass.h"
#include "backends/cpu/canonicalization/position_constants.h"
#include "backends/cpu/canonicalization/precision_pass.h"
#include "backends/cpu/canonicalization/wide_integer_weights.h"
#include "backends/cpu/planning/batch_split.h"
#include "backends/cpu/planning/buffer_assignment.h"
#include "backends/cpu/planning/plan.h"
#include "backends/cpu/planning/planners.h"
#include "backends/cpu/thunk_emitter.h"
#include "base/logging.h"
#include "base/status.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "passes/dce.h"
#include "passes/dump.h"

namespace xonnx::cpu {

class Compiler {
 public:
  Compiler(std::unique_ptr<hlo::Module> module, const CompileOptions& options)
      : exe_(new Executable), options_(options) {
    exe_->module_ = std::move(module);
  }

  // The thunks of each of the plan's concurrent runs, by the positions of
  // their steps; a run whose parts did not both get thunks runs in turn.
  static std::vector<Executable::ConcurrentRun> ConcurrentRuns(const Plan& plan,
                                                               const std::vector<int64_t>& positions) {
    std::vector<Executable::ConcurrentRun> runs;
    for (const Plan::Branches& b : plan.concurrent) {
      Executable::ConcurrentRun run;
      run.begin = positions.size();
      for (size_t k = 0; k < positions.size(); ++k) {
        if (positions[k] < b.first || positions[k] > b.last) continue;
        run.begin = std::min(run.begin, k);
        run.end = k + 1;
        run.part.push_back(positions[k] >= b.split);
      }
      bool both =
          std::count(run.part.begin(), run.part.end(), 1) > 0 && std::count(run.part.begin(), run.part.end(), 0) > 0;
      if (both && run.part.size() == run.end - run.begin) runs.push_back(std::move(run));
    }
    return runs;
  }

  absl::StatusOr<std::unique_ptr<Executable>> Run() {
    RETURN_IF_ERROR(hlo::Verify(*exe_->module_));
    hlo::Computation* entry = exe_->module_->entry();
    for (hlo::Instruction* p : entry->parameters()) {
      if (!p->shape().IsArray()) return Unimplemented("tuple-shaped parameters are not supported");
      exe_->parameter_shapes_.push_back(p->shape());
    }
    Plan plan(entry);
    const bool native = !options_.reference;
    if (native) PlanPackedProducts(&plan);
    if (native) PlanSiblingProducts(&plan);
    if (native && options_.use_dnnl) PlanEpilogues(options_, &plan);
    if (native && options_.use_dnnl) PlanIntegerProducts(&plan);
    if (native && options_.use_dnnl && options_.blocked_layouts) PlanBlockedLayouts(options_, &plan);
    if (native && options_.fuse_elementwise) PlanRowFusions(&plan);
    if (native && options_.fuse_elementwise) PlanFusions(&plan);
    if (native && options_.use_dnnl && options_.blocked_layouts && options_.fuse_elementwise)
      PlanBlockedLoops(options_, &plan);
    if (native && options_.use_dnnl) PlanDotViews(&plan);
    if (native && options_.concurrent_branches && !options_.distinct_buffers) PlanConcurrentBranches(&plan);
    ASSIGN_OR_RETURN(BufferAssignment buffers, AssignBuffers(plan, options_.distinct_buffers));
    EmitContext ctx{plan, buffers, options_, *exe_->module_, &exe_->keep_alive_};
    ASSIGN_OR_RETURN(EmittedThunks emitted, EmitThunks(ctx));
    exe_->thunks_ = std::move(emitted.thunks);
    exe_->thunk_kinds_ = std::move(emitted.kinds);
    exe_->thunk_writes_ = std::move(emitted.writes);
    exe_->constants_ = std::move(buffers.constants);
    int64_t scratch = 0, second = 0;
    for (const Thunk& t : exe_->thunks_) scratch = std::max(scratch, t.scratch_bytes);
    exe_->concurrent_ = ConcurrentRuns(plan, emitted.positions);
    for (const Executable::ConcurrentRun& run : exe_->concurrent_)
      for (size_t k = run.begin; k < run.end; ++k)
        if (run.part[k - run.begin]) second = std::max(second, exe_->thunks_[k].scratch_bytes);
    exe_->scratch_offset_ = AlignUp(buffers.arena_bytes);
    exe_->second_scratch_offset_ = exe_->scratch_offset_ + AlignUp(scratch);
    exe_->arena_bytes_ =
        scratch > 0 || second > 0 ? exe_->second_scratch_offset_ + AlignUp(second) : buffers.arena_bytes;
    exe_->output_refs_ = buffers.leaves.at(entry->root());
    if (entry->root()->shape().IsTuple())
      exe_->output_shapes_ = entry->root()->shape().tuple_shapes;
    else
      exe_->output_shapes_ = {entry->root()->shape()};
    for (const hlo::Shape& s : exe_->output_shapes_)
      if (!s.IsArray()) return Unimplemented("nested tuple results are not supported");
    return std::move(exe_);
  }

 private:
  std::unique_ptr<Executable> exe_;
  CompileOptions options_;
};

namespace {

// XONNX_DUMP_TO=DIR, this backend's counterpart of XLA's --xla_dump_to: each
// program compiled writes DIR/<module>.<pid>.<n>.cpu.txt with the HLO it
// runs (after the backend's passes) and its kernels in order, to see what
// became of a model's ops. A dump that cannot be written is a warning: it
// never fails the compilation.
void MaybeDump(const Executable& exe) {
  const char* dir = std::getenv("XONNX_DUMP_TO");
  if (!dir || !*dir) return;
  static std::atomic<int> counter{0};
  std::string name = exe.module().name();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
  std::filesystem::path path =
      std::filesystem::path(dir) / absl::StrCat(name, ".", ::getpid(), ".", counter++, ".cpu.txt");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream f(path);
  f << "# The program as the CPU backend runs it, after its passes.\n"
    << hlo::ToText(exe.module()) << "\n# Kernels in run order (" << exe.arena_bytes()
    << " bytes of working memory per call):\n"
    << exe.KernelListing();
  f.close();
  if (!f) LOG(WARNING) << "cannot write " << path.string() << " (XONNX_DUMP_TO)";
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executable>> Executable::Compile(std::unique_ptr<hlo::Module> module,
                                                                const CompileOptions& options, passes::Dumper* dumper) {
  auto dump = [&](absl::string_view step) {
    if (dumper) dumper->Dump(*module, step);
  };
  // A batch run in parts compiles the program for one part; the executable
  // keeps the whole batch's shapes as its signature.
  if (options.reference) {  // the oracle: the module as it came, one reference kernel per instruction
    Compiler c(std::move(module), options);
    return c.Run();
  }
  const int64_t rows = options.batch_rows;
  std::optional<BatchSplit> split;
  std::vector<hlo::Shape> full_params, full_outputs;
  if (rows > 0 && (split = SplitBatch(*module, rows)) && hlo::Verify(*split->part).ok()) {
    for (const hlo::Instruction* p : module->entry()->parameters()) full_params.push_back(p->shape());
    const hlo::Shape& root = module->entry()->root()->shape();
    full_outputs = root.IsTuple() ? root.tuple_shapes : std::vector<hlo::Shape>{root};
    module = std::move(split->part);
  } else {
    split.reset();
  }
  UpcastHalfPrecision upcast(options.excess_precision);
  RETURN_IF_ERROR(upcast.Run(module.get()).status());
  dump(upcast.name());
  PositionConstants positions;
  RETURN_IF_ERROR(positions.Run(module.get()).status());
  dump(positions.name());
  if (options.use_dnnl) {
    ConvCanonicalization convs;
    RETURN_IF_ERROR(convs.Run(module.get()).status());
    dump(convs.name());
    DotOfConcatenate concatenated;
    RETURN_IF_ERROR(concatenated.Run(module.get()).status());
    dump(concatenated.name());
    AxisMaps axis_maps;
    RETURN_IF_ERROR(axis_maps.Run(module.get()).status());
    dump(axis_maps.name());
    DotCanonicalization dots;
    RETURN_IF_ERROR(dots.Run(module.get()).status());
    dump(dots.name());
    RETURN_IF_ERROR(RunLayoutPasses(module.get()));
    dump("layout");
    // After the layouts: the window sums' reshapes would stop transposes
    // from sinking.
    SplitWideIntegerWeights wide;
    ASSIGN_OR_RETURN(bool split, wide.Run(module.get()));
    if (split) RETURN_IF_ERROR(passes::Dce().Run(module.get()).status());
    dump(wide.name());
  }
  Compiler c(std::move(module), options);
  ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, c.Run());
  if (split) {
    exe->parts_ = split->parts;
    for (size_t k = 0; k < full_params.size(); ++k)
      exe->param_part_bytes_.push_back(split->split_param[k] ? exe->parameter_shapes_[k].ByteSize() : 0);
    for (const hlo::Shape& s : exe->output_shapes_) exe->output_part_bytes_.push_back(s.ByteSize());
    exe->parameter_shapes_ = std::move(full_params);
    exe->output_shapes_ = std::move(full_outputs);
  }
  MaybeDump(*exe);
  return exe;
}

}  // namespace xonnx::cpu
