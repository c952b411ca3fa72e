#include "cli/run_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace tpusim::cli {

void PrintResult(const RunShape& run, const sim::BoardConfig& board, const CompiledModule& compiled,
                 const sim::RunReport& r, const profiler::Report& report) {
  const lowering::LoweredModule& low = compiled.lowered;
  const profiler::Metrics& m = report.metrics;
  const profiler::StepBreakdown& b = m.step_breakdown;
  std::printf("%s on %s (%d cores)\n", run.module_path.c_str(), board.name.c_str(), board.cores());
  if (low.data_parallel)
    std::printf("data parallel: global batch %lld split over %d cores (%lld per core)\n",
                static_cast<long long>(low.global_batch), board.cores(),
                static_cast<long long>(low.batch_per_core));
  else if (low.partitions > 1 && low.global_batch > 0)
    std::printf("%d partitions, one per core: global batch %lld, %lld per core\n", low.partitions,
                static_cast<long long>(low.global_batch),
                static_cast<long long>(low.batch_per_core));
  else if (low.replicas > 1)
    std::printf("%d replicas, one per core, batch %lld per core\n", low.replicas,
                static_cast<long long>(low.batch_per_core));
  else if (!low.not_split_reason.empty())
    std::printf("not data parallel: %s; every core runs the whole module\n",
                low.not_split_reason.c_str());
  std::map<lowering::KernelKind, int> kinds;
  int approximate = 0;
  for (const lowering::LoweredOp& op : low.ops) {
    ++kinds[op.kind];
    approximate += !op.note.empty();
  }
  std::printf(
      "kernels: %d MXU, %d VPU, %d DMA, %d collective (%d with notes: tpusim compile --emit isa)\n",
      kinds[lowering::KernelKind::kMxu], kinds[lowering::KernelKind::kVpu],
      kinds[lowering::KernelKind::kDma], kinds[lowering::KernelKind::kCollective], approximate);
  std::printf("steps: %d (%d per execution)   simulated time: %.3f ms\n", run.steps,
              run.steps_per_execution, r.time_us / 1e3);
  const double examples_per_s =
      r.time_us > 0 ? run.steps * static_cast<double>(low.global_batch) / (r.time_us * 1e-6) : 0;
  std::printf("step time: %.4f ms (avg), %.4f ms (min), %.4f ms (max)", m.step_time_ms.avg,
              m.step_time_ms.min, m.step_time_ms.max);
  if (low.global_batch > 0) std::printf("   %.0f examples/s", examples_per_s);
  std::printf("\n");
  // FLOPs as XLA's cost analysis counts them (what XProf divides by the step time).
  const double step_flops = low.model_flops_per_step_per_core * board.cores();
  const double tflops =
      m.step_time_ms.avg > 0 ? step_flops / (m.step_time_ms.avg * 1e-3) / 1e12 : 0;
  const bool tera = step_flops >= 1e12;
  std::printf(
      "MXU: %.1f%%   idle: %.1f%%   %.3g %cFLOP per step, %.1f TFLOP/s   HBM peak per core: "
      "%.1f MiB\n",
      m.mxu_utilization_percent, m.device_idle_time_percent, step_flops / (tera ? 1e12 : 1e9),
      tera ? 'T' : 'G', tflops, compiled.report.peak_hbm_bytes / 1048576.0);
  // XLA's rematerialization: values recomputed so that the program fits HBM.
  if (const auto& r = compiled.report.recomputed; !r.empty()) {
    const auto largest = std::max_element(
        r.begin(), r.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
    std::printf(
        "rematerialized to fit HBM: %zu value%s recomputed, HBM %.1f -> %.1f MiB (largest: %%%s, "
        "%.1f MiB, again before %%%s)\n",
        r.size(), r.size() == 1 ? "" : "s", compiled.report.peak_before_recomputing / 1048576.0,
        compiled.report.peak_hbm_bytes / 1048576.0, largest->value.c_str(),
        largest->bytes / 1048576.0, largest->before.c_str());
  }
  std::printf(
      "step breakdown (ms): compute %.4f, infeed %.4f, all-reduce %.4f, outfeed %.4f, "
      "host overhead %.4f\n",
      b.compute_ms, b.infeed_ms, b.all_reduce_ms, b.outfeed_ms, b.host_overhead_ms);
  // The framework ops that take the most op time, when the module's metadata names them. A
  // fusion's op_name can join every fused op's with ':' (XLA's CPU dumps): the screen shows the
  // first and how many more (the summary keeps the whole name).
  auto shorten = [](const std::string& name) {
    std::vector<std::string> parts;
    for (size_t a = 0, b; a <= name.size(); a = b + 1) {
      b = std::min(name.find(':', a), name.size());
      parts.push_back(name.substr(a, b - a));
    }
    const bool joined = parts.size() > 1 &&
                        std::all_of(parts.begin(), parts.end(),
                                    [](const auto& p) { return p.find('/') != std::string::npos; });
    std::string out =
        joined ? parts[0] + " (+" + std::to_string(parts.size() - 1) + " more)" : name;
    constexpr size_t kMax = 160;
    return out.size() > kMax ? out.substr(0, kMax - 3) + "..." : out;
  };
  std::string top;
  int shown = 0;
  for (const profiler::FrameworkOpEntry& f : report.framework_ops) {
    if (f.framework_op == "(no framework op)" || shown == 3) continue;
    top += std::string(shown++ ? "; " : "") + shorten(f.framework_op) + " " +
           std::to_string(static_cast<int>(f.time_percent + 0.5)) + "%" +
           (f.source.empty() ? "" : " (" + f.source + ")");
  }
  if (!top.empty()) std::printf("top framework ops: %s\n", top.c_str());
}

namespace {
// Of the largest |reference| of a step. Issue 4 allows bf16 tolerance (2^-8 = 3.9e-3); we
// hold to 1e-3 because real bugs hid just below it (a collective race at 8.5e-4 .. 1.7e-3,
// docs/evaluator.md) while correct kernels measure 2e-10 (mlp) to 1.3e-4 (transformer-layer).
constexpr double kTolerance = 1e-3;

std::string Format(const char* format, double x) {
  char text[32];
  std::snprintf(text, sizeof text, format, x);
  return text;
}
}  // namespace

void ReportValues(const std::vector<driver::ValueCheck>& steps, int fed_back) {
  const driver::ValueCheck* failed = nullptr;
  for (const driver::ValueCheck& v : steps) {
    const bool match = v.error < kTolerance;
    if (!match && !failed) failed = &v;
    std::string label = "values: ";
    if (steps.size() > 1)
      label += "step " + std::to_string(v.step + 1) +
               (v.step > 0 ? " (from the simulated step " + std::to_string(v.step) + ")" : "") +
               ": ";
    if (steps.size() > 1 && v.has_output0)
      label += "loss " + Format("%.6g", v.simulated_output0) + " (reference " +
               Format("%.6g", v.reference_output0) + "), ";
    std::printf("%smax |simulated - reference| = %.2e of the largest |reference| (%s)\n",
                label.c_str(), v.error, match ? "match" : "MISMATCH");
  }
  if (fed_back > 0 && steps.size() > 1 && steps.front().has_output0)
    std::printf(
        "training: %d outputs update their parameters in place; output 0 (the loss) %.6g at "
        "step 1 -> %.6g at step %zu (simulated)\n",
        fed_back, steps.front().simulated_output0, steps.back().simulated_output0, steps.size());
  if (!failed) return;
  std::printf(
      "values: worst result of step %d: output %zu%s, %.2e of its largest |reference|\n",
      failed->step + 1, failed->worst_output,
      failed->worst_output_name.empty() ? "" : (" (" + failed->worst_output_name + ")").c_str(),
      failed->worst_output_error);
  throw CliError("simulated values differ from the reference evaluator");
}

}  // namespace tpusim::cli
