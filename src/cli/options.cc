// The options every command shares: devices, buckets, types, the cache.
#include <unistd.h>

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"

namespace xonnx::cli {

DeviceArgs g_device;

// "name=1x3x224x224" -> shape map entry.
xonnx::ShapeMap ParseShapes(const std::vector<std::string>& specs) {
  xonnx::ShapeMap m;
  for (const auto& spec : specs) {
    std::vector<std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty())
      throw CliError{absl::StrCat("--shape '", spec, "': expected NAME=DIMxDIMx...")};
    std::vector<int64_t> dims;
    if (!kv[1].empty()) {
      for (absl::string_view d : absl::StrSplit(kv[1], absl::ByAnyChar("x,"))) {
        int64_t v;
        if (!absl::SimpleAtoi(d, &v) || v < 0)
          throw CliError{absl::StrCat("--shape '", spec, "': bad dimension '", d, "'")};
        dims.push_back(v);
      }
    }
    m[kv[0]] = dims;
  }
  return m;
}

std::vector<int64_t> ParseSizes(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int64_t v;
    if (!absl::SimpleAtoi(part, &v) || v < 1)
      throw CliError{absl::StrCat(flag, " '", text, "': expected a comma list of sizes >= 1, e.g. 1,8,64")};
    out.push_back(v);
  }
  if (out.empty()) throw CliError{absl::StrCat(flag, " '", text, "': no sizes given")};
  return out;
}

DataType ParseFloatType(const std::string& text, const std::string& flag) {
  if (text == "f32" || text == "float32") return DataType::kFloat32;
  if (text == "f16" || text == "float16") return DataType::kFloat16;
  if (text == "bf16" || text == "bfloat16") return DataType::kBFloat16;
  throw CliError{absl::StrCat(flag, " '", text, "': expected f32, f16 or bf16")};
}

// A progress bar on stderr while buckets compile, when it is a terminal.
void ShowProgress(int done, int total) {
  constexpr int kWidth = 30;
  int filled = total ? done * kWidth / total : kWidth;
  std::cerr << "\rxonnx: compiling buckets [" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
            << done << "/" << total << (done == total ? "\n" : "") << std::flush;
}

xonnx::SessionOptions BaseOptions() {
  xonnx::SessionOptions o;
  o.plugin = g_device.plugin;
  if (g_device.device == "all") {
    o.device = xonnx::SessionOptions::kAllDevices;
  } else if (!absl::SimpleAtoi(g_device.device, &o.device) || o.device < 0) {
    throw CliError{
        absl::StrCat("--device '", g_device.device, "': expected a device index (see `xonnx devices`) or 'all'")};
  }
  for (const auto& text : g_device.create_options) {
    o.create_options.push_back(Check(xonnx::ParseCreateOption(text)));
  }
  o.max_batch = g_device.max_batch;
  o.steps = g_device.steps;
  if (!g_device.batch_buckets.empty()) o.batch_buckets = ParseSizes(g_device.batch_buckets, "--batch-buckets");
  for (const auto& spec : g_device.dim_buckets) {
    std::vector<std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty())
      throw CliError{absl::StrCat("--dim-buckets '", spec, "': expected NAME=16,32,64")};
    o.dim_buckets[kv[0]] = ParseSizes(kv[1], "--dim-buckets");
  }
  o.data_type = ParseFloatType(g_device.data_type, "--data-type");
  o.io_data_type = ParseFloatType(g_device.io_data_type, "--io-data-type");
  o.allow_tf32 = g_device.allow_tf32;
  o.check_indices = !g_device.no_check_indices;
  o.use_cache = !g_device.no_cache;
  o.cache_dir = g_device.cache_dir;
  o.compile_threads = g_device.compile_threads;
  if (g_device.io_staging == "auto") {
    o.io_staging = xonnx::SessionOptions::IoStaging::kAuto;
  } else if (g_device.io_staging == "mapped") {
    o.io_staging = xonnx::SessionOptions::IoStaging::kMapped;
  } else if (g_device.io_staging == "plugin") {
    o.io_staging = xonnx::SessionOptions::IoStaging::kPlugin;
  } else {
    throw CliError{absl::StrCat("--io-staging '", g_device.io_staging, "': expected auto, mapped or plugin")};
  }
  if (g_device.program_format == "auto") {
    o.program_format = xonnx::SessionOptions::ProgramFormat::kAuto;
  } else if (g_device.program_format == "hlo") {
    o.program_format = xonnx::SessionOptions::ProgramFormat::kHlo;
  } else if (g_device.program_format == "stablehlo") {
    o.program_format = xonnx::SessionOptions::ProgramFormat::kStableHlo;
  } else {
    throw CliError{absl::StrCat("--program-format '", g_device.program_format, "': expected auto, hlo or stablehlo")};
  }
  if (g_device.spin_wait_us < -1) throw CliError{"--spin-wait-us must be >= 0 (or -1: automatic)"};
  o.spin_wait_us = g_device.spin_wait_us;
  if (g_device.deadline_ms < 0) throw CliError{"--deadline-ms must be >= 0"};
  o.deadline_ms = g_device.deadline_ms;
  o.profile_file = g_device.profile;
  o.dump.to = g_device.dump_to;
  o.dump.pass_re = g_device.dump_pass_re;
  o.dump.onnx = g_device.dump_onnx;
  if (!g_device.dump_as.empty()) {
    o.dump.as_text = false;
    for (absl::string_view f : absl::StrSplit(g_device.dump_as, ',')) {
      if (f == "text") {
        o.dump.as_text = true;
      } else if (f == "proto") {
        o.dump.as_proto = true;
      } else if (f == "dot") {
        o.dump.as_dot = true;
      } else if (f == "html") {
        o.dump.as_html = true;
      } else if (f == "stablehlo") {
        o.dump.as_stablehlo = true;
      } else {
        throw CliError{
            absl::StrCat("--dump-as '", f, "': expected text, proto, dot, html or stablehlo (comma-separated)")};
      }
    }
  }
  if (o.dump.to.empty() && (o.dump.onnx || !o.dump.pass_re.empty() || !g_device.dump_as.empty()))
    throw CliError{"--dump-pass-re, --dump-as and --dump-onnx need --dump-to DIR"};
  if (isatty(STDERR_FILENO)) o.compile_progress = ShowProgress;
  return o;
}

std::unique_ptr<xonnx::Session> Open(const std::string& path, bool allow_unsupported, bool plugin_needed) {
  xonnx::SessionOptions o = BaseOptions();
  o.allow_unsupported = allow_unsupported;
  if (!plugin_needed && g_device.plugin.empty()) o.plugin = xonnx::SessionOptions::kNoPlugin;
  return Check(xonnx::Session::Open(path, o));
}

void AddInputOptions(CLI::App* cmd, InputArgs& a, bool with_files) {
  if (with_files) {
    cmd->add_option("--input", a.inputs, "Input tensor NAME=FILE (.pb TensorProto or .npy); repeatable");
    cmd->add_option("--input-dir", a.input_dir, "Folder with input_<i>.pb files (matched by name, else position)");
  }
  cmd->add_option("--shape", a.shapes, "Shape of an input, NAME=1x3x224x224 (for dynamic dims); repeatable");
  cmd->add_option("--seed", a.seed, "Seed for the random values of inputs not given")->capture_default_str();
}

void AddDeviceOptions(CLI::App* cmd, bool serving) {
  cmd->add_option("--plugin", g_device.plugin,
                  "PjRT plugin: a file path (with a '/'), a library file found through LD_LIBRARY_PATH (with "
                  "'.so'), or a name such as cuda or tpu, looked up in XONNX_PLUGINS=name:path,..., JAX's "
                  "PJRT_NAMES_AND_LIBRARY_PATHS, ~/.local/lib/xonnx/plugins, <prefix>/lib/xonnx/plugins and JAX's "
                  "installed plugins (`xonnx devices --all` lists them); default and 'cpu': xonnx's CPU plugin, "
                  "libxonnx_pjrt_cpu.so, found next to this program (XONNX_PLUGIN overrides the default)");
  cmd->add_option("--dump-to", g_device.dump_to,
                  "Write each program's HLO module to DIR as imported, after the passes --dump-pass-re names, and "
                  "as it goes to the plugin, numbered in order (XONNX_FLAGS=--dump_to=DIR does the same)");
  cmd->add_option("--dump-pass-re", g_device.dump_pass_re,
                  "Regular expression of the importer's passes after which to dump (e.g. '.*')");
  cmd->add_option(
      "--dump-as", g_device.dump_as,
      "Dump formats, comma-separated: text (default), proto, dot, html (a self-contained page with each graph drawn), "
      "stablehlo (MLIR text)");
  cmd->add_flag("--dump-onnx", g_device.dump_onnx,
                "Also write the model as imported (nodes sorted) to the dump folder");
  cmd->add_option("--create-option", g_device.create_options,
                  "Option for the plugin's client, NAME=VALUE (true/false, integer, float, comma list of integers, "
                  "or string), e.g. cpu_device_count=4 or memory_fraction=0.5; repeatable");
  if (!serving) return;
  cmd->add_option("--device", g_device.device,
                  "Index of the plugin's device to run on (see `xonnx devices`), or 'all': each batch is split "
                  "across all devices and run concurrently")
      ->capture_default_str();
  cmd->add_option("--max-batch", g_device.max_batch,
                  "Largest batch to compile for; with --steps S, buckets max-batch*i/S for i=1..S are compiled at "
                  "start (a call runs on the smallest bucket that fits, padded with zeros; larger batches are split)");
  cmd->add_option("--steps", g_device.steps, "Number of batch buckets up to --max-batch")->capture_default_str();
  cmd->add_option("--batch-buckets", g_device.batch_buckets,
                  "Explicit batch buckets, e.g. 1,8,64 (instead of --max-batch/--steps)");
  cmd->add_option("--dim-buckets", g_device.dim_buckets,
                  "Buckets for a dynamic dimension by its name in the model, NAME=16,32,64 (padded with zeros, "
                  "outputs cut back); repeatable");
  cmd->add_option("--data-type", g_device.data_type,
                  "Type the model computes in: f32, f16 or bf16 (weights converted once; reductions accumulate in f32)")
      ->capture_default_str();
  cmd->add_flag("--allow-tf32", g_device.allow_tf32,
                "Let the plugin round float32 matrix products and convolutions to TF32 inputs (XLA's GPU default; "
                "faster, ~1e-3 relative error); without it they are exact float32");
  cmd->add_flag("--no-check-indices", g_device.no_check_indices,
                "Do not check index inputs known only at run time (Gather's, Scatter's, embeddings' ids) against the "
                "dimensions they index; by default a value out of range fails the run naming the node, as in ONNX "
                "Runtime, instead of being clamped or dropped");
  cmd->add_option("--io-data-type", g_device.io_data_type,
                  "Host-side type of float inputs and outputs: f32, f16 or bf16 (input files of another float type "
                  "are converted)")
      ->capture_default_str();
  cmd->add_option("--cache-dir", g_device.cache_dir,
                  absl::StrCat("Persistent compile cache folder ", kCacheDirDefault));
  cmd->add_flag("--no-cache", g_device.no_cache, "Do not read or write the persistent compile cache");
  cmd->add_option("--compile-threads", g_device.compile_threads,
                  "Threads compiling buckets at start (default: one per hardware thread)");
  cmd->add_option("--profile", g_device.profile,
                  "Write a Chrome/Perfetto trace of the session to FILE: calls and their phases, compiles, host "
                  "nodes and, on xonnx's CPU plugin, every kernel named by its ONNX node (ui.perfetto.dev; "
                  "`xonnx profile FILE` sums it by op type)");
  cmd->add_option("--deadline-ms", g_device.deadline_ms,
                  "Milliseconds each call may take before it fails with DEADLINE_EXCEEDED (0: no limit); xonnx's "
                  "CPU plugin stops a program between kernels and loop steps, other plugins before it starts")
      ->capture_default_str();
  cmd->add_option("--io-staging", g_device.io_staging,
                  "How inputs and outputs cross to the device: 'mapped' through host memory registered for its "
                  "DMA (mapped once, reused), 'plugin' through the plugin's own staging copy, 'auto' mapped "
                  "except on xonnx's CPU plugin")
      ->capture_default_str();
  cmd->add_option("--program-format", g_device.program_format,
                  "How programs go to the plugin: 'hlo' (a serialized HloModuleProto), 'stablehlo' (StableHLO "
                  "MLIR text, for plugins that take only MLIR), 'auto' HLO, then StableHLO if the plugin refuses "
                  "the format")
      ->capture_default_str();
  cmd->add_option("--spin-wait-us", g_device.spin_wait_us,
                  "Poll for a call's results up to this many microseconds before sleeping (lower latency on "
                  "GPUs, one busy core while polling); -1: 2000 on GPU plugins, 0 on xonnx's CPU plugin")
      ->capture_default_str();
}

}  // namespace xonnx::cli
