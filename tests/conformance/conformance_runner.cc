// Runs the ONNX backend node tests through xonnx::Session (the path of
// `xonnx run`) and compares with ONNX's tolerances (rtol 1e-3, atol 1e-7).
// Each case runs in a forked child so one crash cannot hide the others.
//
//   conformance_runner --data DIR/node --expected-failures FILE [--report OUT.json] [--filter SUBSTR]
//                      [--timeout S] [--shard I/N] [--in-process [--after CASE]] [--rtol R] [--atol A]
//                      [--plugin PATH] [--data-type f32|f16|bf16] [--create-option K=V]
//
// --in-process runs every case in this process, for plugins whose client is
// slow to create or does not survive fork() (XLA's GPU plugin): a crash or a
// time-out then ends the run; stderr says "running CASE" before each case so
// that a driver can record it and go on with --after CASE.
// --via-cli XONNX runs each case through that `xonnx run` program instead,
// reading and writing the test data's files (TensorProto, SequenceProto,
// OptionalProto): every value the command must speak.
// Exit status 1 when a case not listed in the expected-failures file fails.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "test_data.h"
#include "xonnx/session.h"

namespace fs = std::filesystem;

namespace {

struct Result {
  std::string status;  // pass, fail, unsupported
  std::string detail;
};

// ONNX's tolerances; 16-bit runs loosen them with --rtol and --atol.
double g_rtol = 1e-3, g_atol = 1e-7;
xonnx::SessionOptions g_options;

bool Close(double a, double e) {
  if (std::isnan(e)) return std::isnan(a);
  if (std::isinf(e)) return a == e;
  return std::abs(a - e) <= g_atol + g_rtol * std::abs(e);
}

// Empty when `got` matches `want`, else why not.
std::string CompareTensors(const std::string& what, const xonnx::Tensor& got, xonnx::Tensor want) {
  if (want.dtype() == xonnx::DataType::kUInt16 && got.dtype() == xonnx::DataType::kBFloat16)
    want = xonnx::Tensor::FromData(xonnx::DataType::kBFloat16, want.dims(), want.data());
  if (got.dims() != want.dims() || got.dtype() != want.dtype())
    return absl::StrCat(what, " is ", got.ShapeString(), ", expected ", want.ShapeString());
  if (got.dtype() == xonnx::DataType::kString) {
    for (int64_t k = 0; k < got.element_count(); ++k)
      if (got.strings()[k] != want.strings()[k])
        return absl::StrFormat("%s element %d is '%s', expected '%s'", what, k, got.strings()[k], want.strings()[k]);
    return "";
  }
  for (int64_t k = 0; k < got.element_count(); ++k) {
    double a = got.GetAsDouble(k), e = want.GetAsDouble(k);
    if (!Close(a, e)) return absl::StrFormat("%s element %d is %.9g, expected %.9g", what, k, a, e);
  }
  return "";
}

Result Failed(const xonnx::Status& st) {
  return {st.code() == xonnx::StatusCode::kUnimplemented ? "unsupported" : "fail", std::string(st.message())};
}

// Empty when the outputs match the expected values, else why not.
std::string CompareValues(const std::vector<xonnx::Value>& got, const std::vector<xonnx::Value>& want) {
  if (want.size() != got.size()) return absl::StrCat("model produced ", got.size(), " outputs, expected ", want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].kind != want[i].kind) return absl::StrCat("output ", i, " is of another kind (tensor, sequence, empty)");
    std::string diff;
    if (got[i].kind == xonnx::Value::Kind::kTensor)
      diff = CompareTensors(absl::StrCat("output ", i), got[i].tensor, want[i].tensor);
    if (got[i].kind == xonnx::Value::Kind::kSequence) {
      if (got[i].elements.size() != want[i].elements.size())
        return absl::StrCat("output ", i, " has ", got[i].elements.size(), " elements, expected ",
                            want[i].elements.size());
      for (size_t k = 0; k < got[i].elements.size() && diff.empty(); ++k)
        diff = CompareTensors(absl::StrCat("output ", i, " element ", k), got[i].elements[k], want[i].elements[k]);
    }
    if (!diff.empty()) return diff;
  }
  return "";
}

// A model with sequence or optional inputs or outputs, through RunValues.
Result RunValuesCase(xonnx::Session& s, const fs::path& dir) {
  for (const fs::path& set : xonnx::testing::NumberedFiles(dir, "test_data_set_")) {
    auto inputs = xonnx::testing::ReadInputValues(s, set);
    if (!inputs.ok()) return {"fail", std::string(inputs.status().message())};
    auto outs = s.RunValues(*inputs);
    if (!outs.ok()) return Failed(outs.status());
    auto wants = xonnx::testing::ReadOutputValues(s, set);
    if (!wants.ok()) return {"fail", std::string(wants.status().message())};
    if (std::string diff = CompareValues(*outs, *wants); !diff.empty()) return {"fail", diff};
  }
  return {"pass", ""};
}

// With --via-cli: each data set through `xonnx run --input-dir --output-dir`
// (the command a user runs), its output files read back by the outputs'
// kinds. The session is opened here only to learn those kinds.
std::string g_cli;

Result RunCaseViaCli(const fs::path& dir) {
  auto s = xonnx::Session::Open((dir / "model.onnx").string(), g_options);
  if (!s.ok()) return Failed(s.status());
  fs::path out = fs::temp_directory_path() / absl::StrCat("xonnx_cli_case_", getpid());
  for (const fs::path& set : xonnx::testing::NumberedFiles(dir, "test_data_set_")) {
    fs::remove_all(out);
    fs::path log = out.string() + ".log";
    std::string cmd =
        absl::StrCat("'", g_cli, "' run '", (dir / "model.onnx").string(), "' --input-dir '", set.string(),
                     "' --output-dir '", out.string(), "' --no-cache > '", log.string(), "' 2>&1");
    int rc = std::system(cmd.c_str());
    std::ifstream f(log);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    fs::remove(log);
    if (rc != 0) return {"fail", absl::StrCat("xonnx run: ", text)};
    std::vector<xonnx::Value> got;
    for (size_t i = 0; i < (*s)->outputs().size(); ++i) {
      auto v = xonnx::ReadValueFile((out / absl::StrCat("output_", i, ".pb")).string(), (*s)->outputs()[i]);
      if (!v.ok()) return {"fail", std::string(v.status().message())};
      got.push_back(*std::move(v));
    }
    auto wants = xonnx::testing::ReadOutputValues(**s, set);
    if (!wants.ok()) return {"fail", std::string(wants.status().message())};
    if (std::string diff = CompareValues(got, *wants); !diff.empty()) return {"fail", diff};
  }
  fs::remove_all(out);
  return {"pass", ""};
}

Result RunCase(const fs::path& dir) {
  auto s = xonnx::Session::Open((dir / "model.onnx").string(), g_options);
  if (!s.ok()) {
    return {s.status().code() == xonnx::StatusCode::kUnimplemented ? "unsupported" : "fail",
            std::string(s.status().message())};
  }
  for (const auto* specs : {&(*s)->inputs(), &(*s)->outputs()})
    for (const auto& spec : *specs)
      if (spec.sequence || spec.optional) return RunValuesCase(**s, dir);
  for (const fs::path& set : xonnx::testing::NumberedFiles(dir, "test_data_set_")) {
    auto inputs = xonnx::testing::ReadInputs(**s, set);
    if (!inputs.ok()) return {"fail", std::string(inputs.status().message())};
    auto outs = (*s)->Run(*inputs);
    if (!outs.ok())
      return {outs.status().code() == xonnx::StatusCode::kUnimplemented ? "unsupported" : "fail",
              std::string(outs.status().message())};
    auto wants = xonnx::testing::ReadOutputs(set);
    if (!wants.ok()) return {"fail", std::string(wants.status().message())};
    if (wants->size() != outs->size())
      return {"fail", absl::StrCat("model produced ", outs->size(), " outputs, expected ", wants->size())};
    for (size_t i = 0; i < wants->size(); ++i) {
      std::string diff = CompareTensors(absl::StrCat("output ", i), (*outs)[i], (*wants)[i]);
      if (!diff.empty()) return {"fail", diff};
    }
  }
  return {"pass", ""};
}

// Runs one case in a child process with a time limit.
Result RunIsolated(const fs::path& dir, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return {"fail", "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(timeout_s);
    Result r = g_cli.empty() ? RunCase(dir) : RunCaseViaCli(dir);
    std::string msg = r.status + "\n" + r.detail;
    (void)!write(fds[1], msg.data(), msg.size());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) msg.append(buf, n);
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (WIFSIGNALED(wstatus))
    return {"fail", WTERMSIG(wstatus) == SIGALRM ? absl::StrCat("timed out after ", timeout_s, " s")
                                                 : absl::StrCat("crashed with signal ", WTERMSIG(wstatus))};
  size_t nl = msg.find('\n');
  if (nl == std::string::npos) return {"fail", "no result from the child"};
  return {msg.substr(0, nl), msg.substr(nl + 1)};
}

std::map<std::string, std::string> ReadExpectations(const std::string& path) {
  std::map<std::string, std::string> m;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t c = line.find(':');
    std::string name = line.substr(0, c);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    m[name] = c == std::string::npos ? "" : line.substr(c + 1);
  }
  return m;
}

// Runs one case in this process; a time-out ends the process.
Result RunInProcess(const fs::path& dir, int timeout_s) {
  std::cerr << "running " << dir.filename().string() << std::endl;
  alarm(timeout_s);
  Result r = RunCase(dir);
  alarm(0);
  return r;
}

constexpr char kUsage[] =
    "usage: conformance_runner --data DIR --expected-failures FILE [--report OUT.json] [--filter S] [--timeout S]\n"
    "         [--shard I/N] [--in-process [--after CASE]] [--via-cli XONNX] [--rtol R] [--atol A] ";

}  // namespace

int main(int argc, char** argv) {
  std::string data, expectations, report, filter, after;
  int timeout_s = 120, shard = 0, shards = 1;
  bool in_process = false;
  g_options.use_cache = false;  // these runs test conversion; a compile cache would skip it
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto device_flag = xonnx::testing::ParseDeviceFlag(argc, argv, &i, &g_options);
    if (!device_flag.ok()) {
      std::cerr << "conformance_runner: " << device_flag.status().message() << "\n";
      return 2;
    }
    if (*device_flag) continue;
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--data")
      data = next();
    else if (a == "--expected-failures")
      expectations = next();
    else if (a == "--report")
      report = next();
    else if (a == "--filter")
      filter = next();
    else if (a == "--timeout")
      timeout_s = std::atoi(next().c_str());
    else if (a == "--in-process")
      in_process = true;
    else if (a == "--via-cli")
      g_cli = next();
    else if (a == "--after")
      after = next();
    else if (a == "--rtol")
      g_rtol = std::atof(next().c_str());
    else if (a == "--atol")
      g_atol = std::atof(next().c_str());
    else if (a == "--shard" && std::sscanf(next().c_str(), "%d/%d", &shard, &shards) == 2 && shards > 0 && shard >= 0 &&
             shard < shards)
      continue;
    else {
      std::cerr << kUsage << xonnx::testing::kDeviceFlagsUsage << "\n";
      return 2;
    }
  }
  if (data.empty() || !fs::is_directory(data)) {
    std::cerr << "conformance_runner: --data must name the generated node test folder\n";
    return 2;
  }
  std::map<std::string, std::string> expected =
      expectations.empty() ? std::map<std::string, std::string>{} : ReadExpectations(expectations);
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(data))
    if (e.is_directory() && e.path().filename().string().find(filter) != std::string::npos) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  // Shard by position, then drop what an interrupted in-process run did.
  std::vector<fs::path> mine;
  for (size_t k = 0; k < cases.size(); ++k)
    if (static_cast<int>(k % shards) == shard && (after.empty() || cases[k].filename().string() > after))
      mine.push_back(cases[k]);
  cases = std::move(mine);
  nlohmann::json j = nlohmann::json::object();
  std::map<std::string, int> counts;
  std::vector<std::string> regressions, fixed;
  auto start = std::chrono::steady_clock::now();
  for (const auto& c : cases) {
    std::string name = c.filename().string();
    Result r = in_process ? RunInProcess(c, timeout_s) : RunIsolated(c, timeout_s);
    ++counts[r.status];
    bool listed = expected.count(name) > 0;
    std::string mark = r.status == "pass" ? (listed ? "  (listed as failing: remove it from the list)" : "")
                                          : (listed ? "  (expected)" : "  REGRESSION");
    std::cout << absl::StrFormat("%-11s %s%s", r.status, name, mark);
    if (!r.detail.empty() && r.status != "pass") std::cout << "  -- " << r.detail.substr(0, 300);
    std::cout << std::endl;  // an in-process crash keeps the lines before it
    if (r.status != "pass" && !listed) regressions.push_back(name);
    if (r.status == "pass" && listed) fixed.push_back(name);
    j[name] = {{"status", r.status}, {"detail", r.detail}, {"expected_failure", listed}};
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int total = cases.size();
  std::cout << absl::StrFormat("\nconformance: %d cases, %d pass (%.1f%%), %d fail, %d unsupported in %.1f s\n", total,
                               counts["pass"], total ? 100.0 * counts["pass"] / total : 0.0, counts["fail"],
                               counts["unsupported"], secs);
  if (!fixed.empty()) std::cout << "conformance: " << fixed.size() << " listed case(s) now pass; shrink the list\n";
  if (!report.empty()) {
    nlohmann::json out = {{"total", total},
                          {"pass", counts["pass"]},
                          {"fail", counts["fail"]},
                          {"unsupported", counts["unsupported"]},
                          {"cases", j}};
    std::ofstream(report) << out.dump(1) << "\n";
  }
  if (!regressions.empty()) {
    std::cout << "conformance: " << regressions.size() << " case(s) failed that are not in the expected-failures list:";
    for (const auto& r : regressions) std::cout << " " << r;
    std::cout << "\n";
    return 1;
  }
  return 0;
}
