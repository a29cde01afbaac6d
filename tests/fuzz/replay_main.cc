// The fuzz targets without libFuzzer (any compiler): runs the target on each
// seed file, then on `--mutations N` mutants of each (bytes flipped, cut,
// inserted or copied from another seed), seeded, so CI exercises every
// target for a fixed short time. A crash or sanitizer report fails the run.
// With clang, the same targets link against libFuzzer instead
// (tests/fuzz/run_fuzzers.sh).
//
//   fuzz_<name> [--mutations N] [--seed S] [--keep-last FILE] SEED_FILE...
//
// --keep-last writes each input to FILE before it runs: after a crash, FILE
// holds the input that caused it.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string Mutate(std::string s, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  int edits = 1 + rng() % 8;
  for (int e = 0; e < edits; ++e) {
    size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 5) {
      case 0:  // flip a bit
        if (!s.empty()) s[at] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1:  // an extreme byte
        if (!s.empty()) s[at] = static_cast<char>(std::vector<int>{0, 0x7f, 0x80, 0xff}[rng() % 4]);
        break;
      case 2:  // cut
        s.resize(at);
        break;
      case 3:  // insert random bytes
        s.insert(at, std::string(1 + rng() % 16, static_cast<char>(rng())));
        break;
      default: {  // splice a piece of another seed
        const std::string& o = seeds[rng() % seeds.size()];
        if (!o.empty()) {
          size_t from = rng() % o.size();
          s.insert(at, o.substr(from, 1 + rng() % 64));
        }
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int mutations = 100;
  uint64_t seed = 1;
  std::string keep_last;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mutations" && i + 1 < argc) {
      mutations = std::atoi(argv[++i]);
    } else if (a == "--keep-last" && i + 1 < argc) {
      keep_last = argv[++i];
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::ifstream f(a, std::ios::binary);
      if (!f) {
        std::cerr << a << ": cannot read the seed\n";
        return 2;
      }
      std::stringstream ss;
      ss << f.rdbuf();
      seeds.push_back(ss.str());
    }
  }
  if (seeds.empty()) {
    std::cerr << "usage: " << argv[0] << " [--mutations N] [--seed S] SEED_FILE...\n";
    return 2;
  }
  std::mt19937_64 rng(seed);
  size_t runs = 0;
  auto run = [&](const std::string& input) {
    if (!keep_last.empty()) std::ofstream(keep_last, std::ios::binary | std::ios::trunc) << input;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    ++runs;
  };
  for (const std::string& s : seeds) {
    run(s);
    for (int m = 0; m < mutations; ++m) run(Mutate(s, seeds, rng));
  }
  std::cout << argv[0] << ": " << runs << " inputs, no crash\n";
  return 0;
}
