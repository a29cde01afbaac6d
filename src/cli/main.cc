// The `xonnx` command: run, bench, convert, info, devices and cache over
// xonnx::Session; this file wires the subcommands' options.
#include <CLI/CLI.hpp>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"

namespace xonnx::cli {
namespace {

int Main(int argc, char** argv) {
  CLI::App app{"xonnx: run ONNX models on XLA devices (ONNX -> XLA HLO -> a PjRT plugin; CPU by default)"};
  app.require_subcommand(1);
  std::string model;
  InputArgs in;

  auto* run = app.add_subcommand("run", "Run a model once and print or save its outputs");
  run->add_option("MODEL", model, "ONNX model file")->required();
  AddInputOptions(run, in, true);
  std::string output_dir;
  run->add_option("--output-dir", output_dir, "Write output_<i>.pb (TensorProto named after the output) here");
  std::string compare;
  double tolerance = 1e-5;
  run->add_option("--compare", compare,
                  "Also run on the reference device ('reference': xonnx's CPU plugin running every instruction on "
                  "the reference evaluator, XLA's interpreter in spirit) and compare the outputs; exit 1 when one "
                  "differs beyond --tolerance")
      ->check(CLI::IsMember({"reference"}));
  run->add_option("--tolerance", tolerance, "Relative L2 error --compare accepts")->capture_default_str();

  auto* bench = app.add_subcommand("bench", "Time loading, compiling and running a model");
  bench->add_option("MODEL", model, "ONNX model file")->required();
  AddInputOptions(bench, in, false);
  int warmup = 5, iterations = 50;
  bool json = false;
  bench->add_option("--warmup", warmup, "Untimed runs before timing")->capture_default_str();
  bench->add_option("--iterations", iterations, "Timed runs")->capture_default_str();
  bench->add_flag(
      "--json", json,
      "Print one JSON object: load_ms, buckets_ms, weights_ms, compile_ms, compiled, from_cache, cache_rejected, "
      "latency_ms{min,median,p90}, phases_ms{upload,execute,download} (means), items_per_s, peak_rss_mb (and "
      "bucket_first_call_ms)");
  int in_flight = 1;
  bool every_bucket = false;
  bench->add_flag("--every-bucket", every_bucket,
                  "Before timing, make one call of each batch bucket's size and report its time (a bucket's first "
                  "call binds the weights on some plugins and allocates its working memory); peak memory then "
                  "covers every bucket");
  bench->add_option("--in-flight", in_flight, "Calls kept in flight at once (Session::RunAsync)")
      ->capture_default_str();

  auto* convert = app.add_subcommand("convert", "Convert a model to XLA HLO (text and/or HloModuleProto)");
  convert->add_option("MODEL", model, "ONNX model file")->required();
  std::string text_out, proto_out;
  std::vector<std::string> shapes;
  int64_t batch = 1;
  bool allow_partial = false;
  convert->add_option("--hlo-text", text_out, "Write HLO text to FILE, or '-' for stdout");
  convert->add_option("--hlo-proto", proto_out, "Write the serialized HloModuleProto to FILE");
  convert->add_option("--shape", shapes, "Shape of an input, NAME=1x3x224x224; repeatable");
  convert->add_option("--batch", batch, "Value for dynamic dimensions of inputs without --shape")
      ->capture_default_str();
  convert->add_flag("--allow-partial", allow_partial, "On an error, write the part converted before it");

  auto* info = app.add_subcommand("info", "Print a model's inputs, outputs, opsets, ops and unsupported ops");
  info->add_option("MODEL", model, "ONNX model file")->required();

  auto* devices = app.add_subcommand("devices", "Print a PjRT plugin's version, platform and devices");
  bool all_plugins = false;
  devices->add_flag("--all", all_plugins,
                    "List every plugin --plugin NAME can find (XONNX_PLUGINS, PJRT_NAMES_AND_LIBRARY_PATHS, "
                    "~/.local/lib/xonnx/plugins, <prefix>/lib/xonnx/plugins, JAX's installed plugins) and whether "
                    "each loads");
  auto* profile = app.add_subcommand("profile", "Sum a trace written by --profile by ONNX op type and node");
  std::string profile_file;
  int top = 10;
  profile->add_option("FILE", profile_file, "The trace (JSON)")->required();
  profile->add_option("--top", top, "How many of the slowest nodes to list")->capture_default_str();
  auto* cache = app.add_subcommand(
      "cache", "Show the persistent compile cache, or trim it: --max-size removes least recently used entries");
  std::string max_size;
  bool clear = false;
  cache->add_option("--cache-dir", g_device.cache_dir, absl::StrCat("Cache folder ", kCacheDirDefault));
  cache->add_option("--max-size", max_size,
                    "Remove the least recently used entries until the rest take at most this much, e.g. 500M or 2G "
                    "(K, M, G: powers of 1024); also removes temporary files that writers left more than an hour ago");
  cache->add_flag("--clear", clear, "Remove every entry (files that are not the cache's are left alone)");
  cache->add_flag("--json", json, "Print one JSON object");
  cache->get_option("--clear")->excludes(cache->get_option("--max-size"));
  for (CLI::App* cmd : {run, bench}) AddDeviceOptions(cmd, /*serving=*/true);
  for (CLI::App* cmd : {convert, info, devices}) AddDeviceOptions(cmd, /*serving=*/false);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*run) return Run(model, in, output_dir, compare, tolerance);
    if (*bench) {
      if (iterations < 1 || warmup < 0) throw CliError{"--iterations must be >= 1 and --warmup >= 0"};
      if (in_flight < 1) throw CliError{"--in-flight must be >= 1"};
      return Bench(model, in, warmup, iterations, json, in_flight, every_bucket);
    }
    if (*convert) return Convert(model, shapes, text_out, proto_out, batch, allow_partial);
    if (*info) return Info(model);
    if (*devices) return all_plugins ? AllPlugins() : Devices();
    if (*profile) return Profile(profile_file, top);
    if (*cache) return Cache(g_device.cache_dir, max_size, clear, json);
  } catch (const CliError& e) {
    std::cerr << "xonnx: error: " << e.message << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "xonnx: error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}

}  // namespace
}  // namespace xonnx::cli

int main(int argc, char** argv) { return xonnx::cli::Main(argc, argv); }
