// The `xonnx` command: run, bench, convert, info, devices, profile, cache, serve and generate
// over the public API; this file wires the subcommands' options and turns
// errors into one line and an exit code (ExitCode in cli/cli.h).
#include <CLI/CLI.hpp>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"

namespace xonnx::cli {
namespace {

constexpr char kExitCodes[] =
    "Exit codes: 0 success; 1 an output differs from --compare's reference or --expect's files; 2 the command "
    "line is wrong; 3 the model, an input file or a name given is wrong or unsupported; 4 the run, the plugin or "
    "writing a result failed.";

// Everything the subcommands' options fill in.
struct Args {
  std::string model;
  InputArgs in;
  RunArgs run;
  BenchArgs bench;
  std::string text_out, proto_out, stablehlo_out;
  std::vector<std::string> shapes;
  int64_t batch = 1;
  bool allow_partial = false, all_plugins = false, json = false, clear = false;
  std::string profile_file, max_size;
  int top = 10;
  ServeArgs serve;
  GenerateArgs generate;
};

CLI::App* AddRun(CLI::App& app, Args& a) {
  auto* run = app.add_subcommand("run", "Run a model once and print or save its outputs");
  run->add_option("MODEL", a.model, "ONNX model file")->required();
  AddInputOptions(run, a.in, true);
  run->add_option("--output-dir", a.run.output_dir,
                  "Write output_<i>.pb (a TensorProto named after the output) and/or output_<i>.npy here");
  run->add_option("--output-format", a.run.output_format, "Files --output-dir writes: pb, npy or both")
      ->check(CLI::IsMember({"pb", "npy", "both"}))
      ->capture_default_str();
  run->add_option("--outputs", a.run.outputs, "Print or write only these outputs (names; repeatable)")->delimiter(',');
  run->add_option("--compare", a.run.compare,
                  "Also run on the reference device ('reference': xonnx's CPU plugin running every instruction on "
                  "the reference evaluator, XLA's interpreter in spirit: tells a wrong kernel or rewrite) or with "
                  "every value in memory of its own ('buffers': the same program on xonnx's CPU plugin, no buffer "
                  "reused, nothing written in place, no branches run at once: tells a buffer-lifetime bug from a "
                  "numeric difference) and compare the outputs; exit 1 when one differs beyond --tolerance")
      ->check(CLI::IsMember({"reference", "buffers"}));
  run->add_option("--expect", a.run.expect_dir,
                  "Compare the outputs with output_<i>.pb (or .npy) in DIR, as ONNX's test data and --output-dir "
                  "store them; exit 1 when one differs beyond --tolerance");
  run->add_option("--tolerance", a.run.tolerance, "Relative L2 error --compare and --expect accept")
      ->capture_default_str();
  return run;
}

CLI::App* AddBench(CLI::App& app, Args& a) {
  auto* bench = app.add_subcommand("bench", "Time loading, compiling and running a model");
  bench->add_option("MODEL", a.model, "ONNX model file")->required();
  AddInputOptions(bench, a.in, true);
  BenchArgs& b = a.bench;
  bench->add_option("--warmup", b.warmup, "Untimed runs before timing")->capture_default_str();
  bench->add_option("--iterations", b.iterations, "Timed runs")->capture_default_str();
  bench->add_option("--duration", b.duration_s, "Time runs for this many seconds instead of --iterations");
  bench->add_flag("--json", b.json,
                  "Print one JSON object: model, device, input_shapes, batch, load_ms, buckets_ms, weights_ms, "
                  "compile_ms, compiled, from_cache, cache_rejected, cache_messages, latency_ms{min,mean,median,p50,"
                  "p90,p95,p99,max,stddev}, phases_ms{upload,execute,download} (means), iterations, in_flight, "
                  "items_per_s, peak_rss_mb (and bucket_first_call_ms)");
  bench->add_option("--export-times", b.export_times,
                    "Write every timed call's latency to FILE (CSV: call,latency_ms)");
  bench->add_flag("--every-bucket", b.every_bucket,
                  "Before timing, make one call of each batch bucket's size and report its time (a bucket's first "
                  "call binds the weights on some plugins and allocates its working memory); peak memory then "
                  "covers every bucket");
  bench->add_option("--in-flight", b.in_flight, "Calls kept in flight at once (Session::RunAsync)")
      ->capture_default_str();
  return bench;
}

CLI::App* AddConvert(CLI::App& app, Args& a) {
  auto* convert =
      app.add_subcommand("convert", "Convert a model to XLA HLO (text and/or HloModuleProto) or StableHLO (MLIR text)");
  convert->add_option("MODEL", a.model, "ONNX model file")->required();
  convert->add_option("--hlo-text", a.text_out, "Write HLO text to FILE, or '-' for stdout");
  convert->add_option("--hlo-proto", a.proto_out, "Write the serialized HloModuleProto to FILE");
  convert->add_option("--stablehlo", a.stablehlo_out,
                      "Write the program as StableHLO (MLIR text, MLIR's generic op form) to FILE, or '-' for stdout");
  convert->add_option("--shape", a.shapes, "Shape of an input, NAME=1x3x224x224; repeatable");
  convert->add_option("--batch", a.batch, "Value for dynamic dimensions of inputs without --shape")
      ->capture_default_str();
  convert->add_flag("--allow-partial", a.allow_partial, "On an error, write the part converted before it");
  convert->add_flag("--no-check-indices", g_device.no_check_indices,
                    "Leave out the program's last output, which holds the smallest and largest value of each index "
                    "input known only at run time for the caller to check (out-of-range indices are then clamped, "
                    "as XLA does)");
  return convert;
}

// Checks what the option parser cannot.
void Validate(const Args& a, const CLI::App& bench) {
  if (!bench) return;
  if (a.bench.iterations < 1 || a.bench.warmup < 0) throw CliError{"--iterations must be >= 1 and --warmup >= 0"};
  if (a.bench.in_flight < 1) throw CliError{"--in-flight must be >= 1"};
  if (a.bench.duration_s < 0) throw CliError{"--duration must be > 0 seconds"};
}

int Main(int argc, char** argv) {
  CLI::App app{"xonnx: run ONNX models on XLA devices (ONNX -> XLA HLO -> a PjRT plugin; CPU by default)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", absl::StrCat("xonnx ", xonnx::Version()));
  app.footer(kExitCodes);
  Args a;
  auto* run = AddRun(app, a);
  auto* bench = AddBench(app, a);
  auto* convert = AddConvert(app, a);
  auto* info = app.add_subcommand("info", "Print a model's inputs, outputs, opsets, ops and unsupported ops");
  info->add_option("MODEL", a.model, "ONNX model file")->required();
  info->add_flag("--json", a.json, "Print one JSON object");
  auto* devices = app.add_subcommand("devices", "Print a PjRT plugin's version, platform and devices");
  devices->add_flag("--all", a.all_plugins,
                    "List every plugin --plugin NAME can find (XONNX_PLUGINS, PJRT_NAMES_AND_LIBRARY_PATHS, "
                    "~/.local/lib/xonnx/plugins, <prefix>/lib/xonnx/plugins, JAX's installed plugins) and whether "
                    "each loads");
  devices->add_flag("--json", a.json, "Print one JSON object (not with --all)");
  auto* profile = app.add_subcommand("profile", "Sum a trace written by --profile by ONNX op type and node");
  profile->add_option("FILE", a.profile_file, "The trace (JSON)")->required();
  profile->add_option("--top", a.top, "How many of the slowest nodes to list")->capture_default_str();
  auto* cache = app.add_subcommand(
      "cache",
      "Show the persistent compile cache, or trim it: --max-size removes least recently used entries. Sessions keep "
      "it to XONNX_CACHE_MAX_SIZE (e.g. 10G; 0 for no bound), else 5G, removing least recently used entries as they "
      "store new ones");
  cache->add_option("--cache-dir", g_device.cache_dir, absl::StrCat("Cache folder ", kCacheDirDefault));
  cache->add_option("--max-size", a.max_size,
                    "Remove the least recently used entries until the rest take at most this much, e.g. 500M or 2G "
                    "(K, M, G: powers of 1024); also removes temporary files that writers left more than an hour ago");
  cache->add_flag("--clear", a.clear, "Remove every entry (files that are not the cache's are left alone)");
  cache->add_flag("--json", a.json, "Print one JSON object");
  cache->get_option("--clear")->excludes(cache->get_option("--max-size"));
  auto* serve = AddServe(app, a.serve);
  auto* generate = AddGenerate(app, a.generate);
  for (CLI::App* cmd : {run, bench}) AddDeviceOptions(cmd, /*serving=*/true);
  AddDeviceOptions(serve, /*serving=*/false);
  AddDeviceOptions(generate, /*serving=*/false);
  for (CLI::App* cmd : {convert, info, devices}) AddDeviceOptions(cmd, /*serving=*/false);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "xonnx: error: " << e.what() << " (see xonnx --help)\n";
    return kExitUsage;
  }
  try {
    Validate(a, *bench);
    if (*run) return Run(a.model, a.in, a.run);
    if (*bench) return Bench(a.model, a.in, a.bench);
    if (*convert) return Convert(a.model, a.shapes, a.text_out, a.proto_out, a.stablehlo_out, a.batch, a.allow_partial);
    if (*info) return Info(a.model, a.json);
    if (*devices) {
      if (a.all_plugins && a.json) throw CliError{"--json lists one plugin's devices; it cannot be used with --all"};
      return a.all_plugins ? AllPlugins() : Devices(a.json);
    }
    if (*profile) return Profile(a.profile_file, a.top);
    if (*serve) return Serve(a.serve);
    if (*generate) return Generate(a.generate);
    if (*cache) return Cache(g_device.cache_dir, a.max_size, a.clear, a.json);
  } catch (const CliError& e) {
    std::cerr << "xonnx: error: " << e.message << "\n";
    return e.code;
  } catch (const std::exception& e) {
    std::cerr << "xonnx: error: " << e.what() << "\n";
    return kExitRuntime;
  }
  return kExitUsage;
}

}  // namespace
}  // namespace xonnx::cli

int main(int argc, char** argv) { return xonnx::cli::Main(argc, argv); }
