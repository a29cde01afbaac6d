// Robustness: mutated copies of a model (flipped bytes, truncations) must
// load and run or fail with a Status, never crash. Each case runs in a
// forked child with a time limit.
//
//   mutation_test MODEL [--cases N] [--seed S]
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "xonnx/session.h"

namespace {

// Opens and runs `bytes` as a model; returns normally on success or error.
void Exercise(const std::string& path) {
  xonnx::SessionOptions options;
  options.use_cache = false;  // every mutant is converted, not looked up
  auto s = xonnx::Session::Open(path, options);
  if (!s.ok()) return;
  std::map<std::string, xonnx::Tensor> inputs;
  for (const auto& spec : (*s)->inputs()) {
    std::vector<int64_t> dims = spec.dims;
    int64_t n = 1;
    for (auto& d : dims) {
      if (d < 0 || d > 64) d = 1;  // keep mutated shapes small
      n *= d;
    }
    if (n > (1 << 20)) return;
    xonnx::Tensor t(spec.dtype, dims);
    for (size_t i = 0; i < t.byte_size(); ++i) static_cast<uint8_t*>(t.data())[i] = static_cast<uint8_t>(i * 37 + 11);
    inputs[spec.name] = std::move(t);
  }
  (void)(*s)->Run(inputs);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: mutation_test MODEL [--cases N] [--seed S]\n";
    return 2;
  }
  std::string model = argv[1];
  int cases = 200;
  uint64_t seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--cases") cases = std::atoi(argv[i + 1]);
    if (a == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  std::ifstream f(model, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string original = ss.str();
  if (original.empty()) {
    std::cerr << model << ": cannot read\n";
    return 2;
  }
  std::mt19937_64 rng(seed);
  std::string path = "/tmp/xonnx_mutation_" + std::to_string(getpid()) + ".onnx";
  int passed = 0, failed = 0;
  for (int c = 0; c < cases; ++c) {
    std::string bytes = original;
    int kind = c % 3;
    if (kind == 0) {  // flip a few bytes
      for (int k = 0; k < 1 + static_cast<int>(rng() % 8); ++k)
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
    } else if (kind == 1) {  // truncate
      bytes.resize(rng() % bytes.size());
    } else {  // overwrite a run with random bytes
      size_t at = rng() % bytes.size(), len = 1 + rng() % 16;
      for (size_t k = at; k < std::min(bytes.size(), at + len); ++k) bytes[k] = static_cast<char>(rng());
    }
    std::ofstream(path, std::ios::binary) << bytes;
    pid_t pid = fork();
    if (pid == 0) {
      alarm(20);
      Exercise(path);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      ++failed;
      std::string keep = "/tmp/xonnx_mutation_crash_" + std::to_string(c) + ".onnx";
      std::ofstream(keep, std::ios::binary) << bytes;
      std::cout << "case " << c << ": "
                << (WTERMSIG(status) == SIGALRM ? "timed out"
                                                : "crashed with signal " + std::to_string(WTERMSIG(status)))
                << " (input kept as " << keep << ")\n";
    } else {
      ++passed;
    }
  }
  std::remove(path.c_str());
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}
