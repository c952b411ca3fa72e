// tpusim run MODULE.hlo: compile an HLO module for the board, simulate it on every core,
// check values against the reference evaluator, and report as the TPU profiler would.
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <utility>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/run_report.h"
#include "compiler/compile.h"
#include "driver/board_target.h"
#include "driver/progress.h"
#include "driver/run_values.h"
#include "driver/step_check.h"
#include "isa/assembler.h"
#include "isa/bf16.h"
#include "profiler/report.h"
#include "sim/simulation.h"
#include "traces/chrome_trace.h"
#include "traces/html_report.h"
#include "traces/monitor.h"
#include "traces/summary.h"

namespace tpusim::cli {
namespace po = boost::program_options;

namespace {

struct RunArgs {
  std::string module_path, config = "v3-8", trace, summary, html;
  bool timing = false, monitor = false, kernel_windows = true;
  uint64_t seed = 1;
  int steps = 1, steps_per_execution = 1;
  double infeed_rate = 0;  // examples per second; 0 = unbounded
  double monitor_interval_us = 100;
  // Largest host memory a value run may take (ValueRunHostBytes); larger runs are
  // timing-only. Half of the 24 GiB of the machines we build on.
  double value_memory_gib = 12;
  // The trace's events (RecorderOptions::max_events) and the one step it keeps (-1: all).
  uint64_t trace_max_events = profiler::RecorderOptions{}.max_events;
  int64_t trace_step = -1;
};

// Why a run cannot check values: the ops whose kernels model only time (the first few).
void PrintTimingOnlyOps(const lowering::LoweredModule& low) {
  std::vector<std::string> names;
  for (const lowering::LoweredOp& op : low.ops)
    if (!op.exact) names.push_back(op.name + " (" + op.opcode + ")");
  std::string list;
  constexpr size_t kShown = 6;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > kShown) list += ", ...";
  std::printf(
      "note: values are checked only when every op's kernel computes them; this module runs "
      "timing-only: %zu of %zu kernels model only time: %s\n",
      names.size(), low.ops.size(), list.c_str());
}

}  // namespace

int RunCommand(const std::vector<std::string>& argv) {
  RunArgs a;
  po::options_description opts(
      "usage: tpusim run MODULE.hlo [options]\n"
      "Compiles an XLA HLO module for the board (data parallel over its cores), simulates\n"
      "it, checks the values against the reference evaluator and reports like the TPU\n"
      "profiler.\nexample: tpusim run examples/hlo/dot_bf16.hlo --trace out/trace.json "
      "--monitor\n\noptions");
  opts.add_options()("help,h", "show this help")(
      "config", po::value(&a.config),
      "v3-8, v3-8-node, v2-8, v2-8-node or a JSON file (default v3-8)")(
      "timing", "timing only: skip values and the reference check")(
      "no-kernel-windows",
      "issue each kernel only once the one before it has drained (no overlap across "
      "kernels, docs/lowering.md)")("trace", po::value(&a.trace),
                                    "write a Chrome trace (Perfetto) to FILE")(
      "trace-max-events", po::value(&a.trace_max_events),
      "events the trace keeps, then aggregates only (default 2000000, about 14 MB of JSON; "
      "a ResNet-50 step has about 46 M)")(
      "trace-step", po::value(&a.trace_step),
      "keep only this step's events in the trace (0-based; default: every step)")(
      "summary", po::value(&a.summary), "write the XProf-style summary JSON to FILE")(
      "html", po::value(&a.html), "write the TPU-monitor HTML page to FILE")(
      "monitor", "print the profiler's monitor lines every --monitor-interval-us")(
      "monitor-interval-us", po::value(&a.monitor_interval_us),
      "simulated microseconds per monitor sample (default 100; at most 50 samples)")(
      "seed", po::value(&a.seed), "seed of the random inputs (default 1)")(
      "steps", po::value(&a.steps), "training steps to run (default 1)")(
      "steps-per-execution", po::value(&a.steps_per_execution),
      "steps per host dispatch (default 1)")(
      "infeed-rate", po::value(&a.infeed_rate),
      "input pipeline rate in examples/s (default: unbounded)")(
      "value-memory-gib", po::value(&a.value_memory_gib),
      "host memory a value run may take; larger runs are timing-only (default 12)");
  po::variables_map vm;
  if (!ParseCommandLine(argv, opts, "run", &a.module_path, &vm)) return 0;
  if (a.module_path.empty()) throw CliError("missing MODULE.hlo (see tpusim run --help)", 2);
  a.timing = vm.count("timing"), a.monitor = vm.count("monitor");
  a.kernel_windows = !vm.count("no-kernel-windows");

  if (a.monitor_interval_us <= 0) throw CliError("--monitor-interval-us must be > 0", 2);
  if (!(a.value_memory_gib >= 0)) throw CliError("--value-memory-gib must be >= 0", 2);
  if (a.trace_max_events < 1) throw CliError("--trace-max-events must be >= 1", 2);
  if (vm.count("trace-step") && (a.trace_step < 0 || a.trace_step >= a.steps))
    throw CliError("--trace-step must name one of the --steps steps (0-based)", 2);
  if (a.steps < 1 || a.steps_per_execution < 1 || a.infeed_rate < 0)
    throw CliError("--steps and --steps-per-execution must be >= 1, --infeed-rate >= 0", 2);
  sim::BoardConfig board = sim::LoadConfig(a.config);
  CompileTarget target = driver::TargetFor(board);
  target.lowering.kernel_windows = a.kernel_windows;
  auto compiled_or = CompileForBoard(ReadFileOrThrow(a.module_path), a.module_path, target);
  if (!compiled_or.ok()) throw CliError(compiled_or.status().message());
  const CompiledModule& compiled = *compiled_or.value();
  const lowering::LoweredModule& low = compiled.lowered;
  if (!a.timing && !low.exact) PrintTimingOnlyOps(low);
  const std::string memory_note =
      a.timing || !low.exact ? ""
                             : driver::ValueMemoryNote(compiled, board.cores(),
                                                       a.value_memory_gib * 1024 * 1024 * 1024);
  std::fputs(memory_note.c_str(), stdout);
  const bool values = !a.timing && low.exact && memory_note.empty();

  // Samples every simulated microsecond (the recorder widens them on long runs).
  profiler::RecorderOptions recorder_options{.num_cores = board.cores(),
                                             .mxus_per_core = board.core.mxus,
                                             .max_events = a.trace_max_events,
                                             .sample_interval_fs = 1'000'000'000,
                                             .keep_events = !a.trace.empty()};
  if (a.trace_step >= 0)
    recorder_options.first_step = recorder_options.last_step = static_cast<uint32_t>(a.trace_step);
  profiler::Recorder recorder(recorder_options);
  driver::ProgressBar progress(a.steps);  // on a terminal, once the run has lasted over a second
  // The profiler computes busy time; the units' own unions would repeat it.
  sim::RunOptions run_options{.functional = values, .sink = &recorder, .unit_busy = false};
  // With values each step is checked as it ends (step_check.h); references are evaluated
  // between slices of the run, outside SystemC's threads.
  std::unique_ptr<driver::StepCheck> step_check;
  sim::Simulation* simulation_ptr = nullptr;
  const bool tty = isatty(STDERR_FILENO);
  if (tty || values)
    run_options.on_progress = [&, steps = a.steps](const sim::RunProgress& p) {
      if (step_check) step_check->Poll();
      if (!tty) return;
      char label[96];
      std::snprintf(label, sizeof label, "step %d/%d, %.3f ms simulated", p.steps_done, steps,
                    p.simulated_fs / 1e12);
      progress.Update(p.steps_done, label);
    };
  if (values)
    run_options.on_core_step_end = [&](int core, int step) {
      step_check->OnCoreStepEnd(*simulation_ptr, core, step);
    };
  sim::Simulation simulation(board, std::move(run_options));
  simulation_ptr = &simulation;
  const std::vector<isa::Program> programs = driver::AssembleCores(low, a.module_path);
  for (int c = 0; c < board.cores(); ++c) {
    recorder.SetTags(c, programs[c].tags);
    simulation.AddCore(programs[c]);
  }
  // The host: each step's batch arrives by infeed over PCIe.
  simulation.SetTrainingLoop(
      driver::TrainingLoopFor(low, board, a.steps, a.steps_per_execution, a.infeed_rate));
  if (values)
    step_check = std::make_unique<driver::StepCheck>(
        compiled, driver::LoadInputs(simulation, compiled, a.seed), a.steps);
  sim::RunReport r = simulation.Run();
  progress.Finish();
  if (!r.ok) throw CliError(r.error);
  recorder.Finish();

  const profiler::HardwarePeaks peaks = driver::PeaksOf(board);
  profiler::RunContext ctx;
  ctx.tpu_type = board.name.rfind("v2", 0) == 0 ? "TPU v2" : "TPU v3";
  // A module every core runs whole names no batch: no advice on the batch per core.
  if (low.batch_per_core > 0) ctx.batch_per_core = static_cast<int>(low.batch_per_core);
  ctx.rows_per_example = low.rows_per_example;
  ctx.hbm_peak_bytes_per_core = static_cast<uint64_t>(compiled.report.peak_hbm_bytes);
  // An SPMD program is one replica over its partitions' cores (the TPU monitor's line).
  if (low.partitions > 1) ctx.replica_count = std::max(1, low.replicas / low.partitions);
  ctx.partitioned = low.partitions > 1;
  ctx.compilations = CompilationCount();
  ctx.steps = a.steps;
  ctx.collective_stream = low.collective_stream;
  for (const lowering::LoweredOp& op : low.ops) {
    if (op.kind == lowering::KernelKind::kCollective) ctx.collective_ops.push_back(op.name);
    if (op.kind == lowering::KernelKind::kMxu) ctx.mxu_ops.push_back(op.name);
    // Every core runs the program: its own device's, or the whole module.
    ctx.model_flops[op.name] += op.model_flops * static_cast<double>(op.executions) * board.cores();
  }
  for (const lowering::LoweredOp& op : low.ops)
    if (!op.framework_op.empty() || !op.source.empty())
      ctx.op_origins.emplace(op.name, profiler::OpOrigin{op.framework_op, op.source});
  ctx.steps_per_execution = a.steps_per_execution;
  for (const auto& op : compiled.report.padding.ops) {
    profiler::PaddingInfo info;
    info.op = op.name;
    info.padded_bytes = static_cast<uint64_t>(op.padded_bytes);
    info.useful_bytes = static_cast<uint64_t>(op.logical_bytes);
    ctx.padding.push_back(info);
  }
  profiler::Report report = profiler::BuildReport(recorder, peaks, ctx);

  PrintResult(RunShape{a.module_path, a.steps, a.steps_per_execution}, board, compiled, r, report);
  if (values) ReportValues(step_check->Finish(), step_check->fed_back());
  if (!report.recommendations.empty())
    std::printf("top recommendation: %s\n", report.recommendations[0].text.c_str());
  if (a.monitor) {  // like the live gauge: one block per interval of simulated time
    const sim::TimeFs interval = static_cast<sim::TimeFs>(a.monitor_interval_us * 1e9);
    const sim::TimeFs step = std::max<sim::TimeFs>(interval, r.end_fs / 50 + 1);
    for (sim::TimeFs t = 0; t < r.end_fs; t += step)
      std::cout << traces::FormatMonitor(recorder, ctx, t, std::min(t + step, r.end_fs)) << "\n";
  }
  auto check = [](const std::string& err) {
    if (!err.empty()) throw CliError(err);
  };
  if (!a.trace.empty()) {
    traces::ChromeTraceOptions trace_options;
    trace_options.op_origins = ctx.op_origins;
    check(traces::WriteChromeTrace(recorder, a.trace, trace_options));
    if (const profiler::EventLog& ev = recorder.events(); ev.truncated)
      std::printf(
          "note: the trace holds the first %zu events; %llu more were not kept "
          "(--trace-max-events raises the cap, --trace-step keeps one step)\n",
          static_cast<size_t>(a.trace_max_events), static_cast<unsigned long long>(ev.dropped));
  }
  if (!a.summary.empty()) check(traces::WriteSummary(report, a.summary));
  if (!a.html.empty()) check(traces::WriteHtmlReport(report, recorder, a.html));
  return 0;
}

namespace {
const bool kRegistered = RegisterCommand(
    {"run", "compile an HLO module, simulate it on the board and profile it", RunCommand, 10});
}  // namespace

}  // namespace tpusim::cli
