// What a traced program is made of inside: the trace a Value belongs to
// (an HLO builder and the instruction of each value) and a finished
// program (its module and specs).
#ifndef XONNX_PROGRAM_TRACE_STATE_H_
#define XONNX_PROGRAM_TRACE_STATE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "hlo/builder.h"
#include "hlo/ir.h"
#include "xonnx/program.h"

namespace xonnx::program::internal {

struct TraceState {
  std::unique_ptr<hlo::Module> module;
  std::unique_ptr<hlo::Builder> builder;
  // Per value: its instruction (null for one whose operation failed) and
  // its spec.
  std::vector<hlo::Instruction*> instructions;
  std::vector<Spec> specs;
  // The first error, naming the operation that failed.
  absl::Status error;
  // Operations recorded so far (each is named after its API function and
  // this count, in the metadata errors and dumps show).
  int64_t ops = 0;
  // Set when Program::Trace returns: the module has moved into the
  // program, and operations on the trace's values are errors.
  bool finished = false;
};

struct ProgramData {
  std::unique_ptr<hlo::Module> module;
  std::vector<Spec> inputs, outputs;
};

// A value on a Jit's device: its buffer, and the run computing it (null
// for an upload that has completed).
struct DeviceData;

// Access to Value's and Program's insides for the implementation.
struct Access {
  static std::shared_ptr<TraceState>& trace(Value& v) { return v.trace_; }
  static const std::shared_ptr<TraceState>& trace(const Value& v) { return v.trace_; }
  static int64_t index(const Value& v) { return v.index_; }
  static Value Make(std::shared_ptr<TraceState> t, int64_t index) {
    Value v;
    v.trace_ = std::move(t);
    v.index_ = index;
    return v;
  }
  static const std::shared_ptr<const ProgramData>& data(const Program& p) { return p.data_; }
  static Program MakeProgram(std::shared_ptr<const ProgramData> d) {
    Program p;
    p.data_ = std::move(d);
    return p;
  }
  static const std::shared_ptr<const DeviceData>& data(const DeviceValue& v) { return v.data_; }
  static DeviceValue MakeDeviceValue(std::shared_ptr<const DeviceData> d) {
    DeviceValue v;
    v.data_ = std::move(d);
    return v;
  }
};

// The trace being made on this thread (null outside Program::Trace).
TraceState* CurrentTrace();
std::shared_ptr<TraceState> CurrentTraceShared();
void SetCurrentTrace(std::weak_ptr<TraceState> t);
std::weak_ptr<TraceState> CurrentTraceWeak();

// Makes `t` the thread's current trace for its lifetime (traces nest: a
// loop body traced inside a program's trace, a program traced inside
// another's tracing).
class CurrentTraceScope {
 public:
  explicit CurrentTraceScope(const std::shared_ptr<TraceState>& t) : previous_(CurrentTraceWeak()) {
    SetCurrentTrace(t);
  }
  ~CurrentTraceScope() { SetCurrentTrace(previous_); }
  CurrentTraceScope(const CurrentTraceScope&) = delete;
  CurrentTraceScope& operator=(const CurrentTraceScope&) = delete;

 private:
  std::weak_ptr<TraceState> previous_;
};

// The instruction of `v` (null when invalid).
hlo::Instruction* InstructionOf(const Value& v);
// A value of trace `t` for `i` (an invalid one when i is null).
Value ValueOf(const std::shared_ptr<TraceState>& t, hlo::Instruction* i);

// Runs `build` to record one operation of API function `api` into the
// trace of `operands` (the current trace when they are all constants):
// operands from another trace, or invalid ones, give an invalid value;
// an error the builder records is annotated with `api` and the operands'
// specs.
using BuildFn = std::function<hlo::Instruction*(hlo::Builder& b, const std::vector<hlo::Instruction*>& ops)>;
Value Record(const char* api, const std::vector<Value>& operands, const BuildFn& build);
// The `count` values of an operation with several results, recorded as
// `first` with the others in `outs` (after the first); all invalid when it
// failed, so that callers may index the results they expect.
std::vector<Value> Results(const Value& first, const std::vector<hlo::Instruction*>& outs, size_t count);
// Records an error of `api` (the first one wins) into `t`.
void Fail(TraceState& t, const char* api, const std::string& message);

}  // namespace xonnx::program::internal

#endif  // XONNX_PROGRAM_TRACE_STATE_H_
