// tpusim run MODULE.hlo: compile an HLO module for the board, simulate it on every core,
// check values against the reference evaluator, and report as the TPU profiler would.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lowering/lower.h"
#include "compiler/passes/pipeline.h"
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
  bool timing = false, monitor = false;
  uint64_t seed = 1;
  int steps = 1, steps_per_execution = 1;
  double infeed_rate = 0;  // examples per second; 0 = unbounded
  double monitor_interval_us = 100;
};

std::vector<uint16_t> Bf16Rows(const eval::Value& v, int64_t first_row, int64_t rows) {
  const int64_t cols = v.shape.dims[1];
  std::vector<uint16_t> out(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i)
    out[i] = isa::F32ToBf16(static_cast<float>(v.data[first_row * cols + i]));
  return out;
}

// Fills HBM with the parameters, each core its rows of the lhs. Returns the inputs.
std::vector<eval::Value> LoadInputs(sim::Simulation& sim, const hlo::HloModule& module,
                                    const lowering::LoweredDot& d, uint64_t seed) {
  std::vector<eval::Value> args;
  for (const hlo::HloInstruction* p : module.entry()->parameters())
    args.push_back(eval::Value::Random(p->shape(), seed + args.size()));
  const eval::Value &lhs = args[d.lhs_parameter], &rhs = args[d.rhs_parameter];
  const int64_t rows = d.m / d.cores;
  std::vector<uint16_t> b = Bf16Rows(rhs, 0, d.k);
  for (int c = 0; c < d.cores; ++c) {
    std::vector<uint16_t> a = Bf16Rows(lhs, c * rows, rows);
    sim.core(c).hbm().Write(d.lhs_address, a.data(), a.size() * 2);
    sim.core(c).hbm().Write(d.rhs_address, b.data(), b.size() * 2);
  }
  return args;
}

// Largest |simulated - reference| over the result, relative to the largest |reference|.
double CompareWithEvaluator(sim::Simulation& sim, const hlo::HloModule& module,
                            const lowering::LoweredDot& d, const std::vector<eval::Value>& args) {
  auto ref = eval::Evaluate(module, args);
  if (!ref.ok()) throw CliError("reference evaluator: " + ref.status().message());
  const eval::Value& want = ref.value()[0];
  const int64_t rows = d.m / d.cores;
  double worst = 0, scale = 1e-30;
  std::vector<float> got(static_cast<size_t>(rows * d.n));
  for (int c = 0; c < d.cores; ++c) {
    sim.core(c).hbm().Read(d.out_address, got.data(), got.size() * 4);
    for (int64_t i = 0; i < rows * d.n; ++i) {
      double w = want.data[c * rows * d.n + i];
      worst = std::max(worst, std::fabs(got[i] - w));
      scale = std::max(scale, std::fabs(w));
    }
  }
  return worst / scale;
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
      "config", po::value(&a.config), "v3-8, v3-8-node, v2-8 or a JSON file (default v3-8)")(
      "timing", "timing only: skip values and the reference check")(
      "trace", po::value(&a.trace), "write a Chrome trace (Perfetto) to FILE")(
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
      "input pipeline rate in examples/s (default: unbounded)");
  po::options_description hidden;
  hidden.add_options()("module", po::value(&a.module_path));
  po::positional_options_description pos;
  pos.add("module", 1);
  po::options_description all;
  all.add(opts).add(hidden);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw CliError(std::string(e.what()) + " (see tpusim run --help)", 2);
  }
  if (vm.count("help")) {
    std::cout << opts;
    return 0;
  }
  if (a.module_path.empty()) throw CliError("missing MODULE.hlo (see tpusim run --help)", 2);
  a.timing = vm.count("timing"), a.monitor = vm.count("monitor");

  auto parsed = hlo::ParseHlo(ReadFileOrThrow(a.module_path), a.module_path);
  if (!parsed.ok()) throw CliError(parsed.status().message());
  hlo::HloModule& module = parsed.value();
  if (auto st = hlo::VerifyModule(module); !st.ok()) throw CliError(st.message());
  sim::BoardConfig board = sim::LoadConfig(a.config);
  auto optimized = hlo::ParseHlo(hlo::PrintModule(module), a.module_path);
  passes::CompileOptions copts;
  copts.hbm_capacity_bytes = static_cast<int64_t>(board.core.hbm_bytes);
  auto compiled = passes::CompileToHlo(optimized.value(), copts);
  if (!compiled.ok()) throw CliError(compiled.status().message());
  if (a.monitor_interval_us <= 0) throw CliError("--monitor-interval-us must be > 0", 2);
  if (a.steps < 1 || a.steps_per_execution < 1 || a.infeed_rate < 0)
    throw CliError("--steps and --steps-per-execution must be >= 1, --infeed-rate >= 0", 2);
  constexpr int kInfeedFlag = 31;
  auto lowered = lowering::LowerDot(module, board.cores(), kInfeedFlag, board.core.mxus);
  if (!lowered.ok()) throw CliError(lowered.status().message());
  const lowering::LoweredDot& d = lowered.value();

  // Samples every simulated microsecond (the recorder widens them on long runs).
  profiler::Recorder recorder(profiler::RecorderOptions{.num_cores = board.cores(),
                                                        .mxus_per_core = board.core.mxus,
                                                        .sample_interval_fs = 1'000'000'000});
  sim::Simulation simulation(board, {.functional = !a.timing, .sink = &recorder});
  for (int c = 0; c < board.cores(); ++c) {
    auto program = isa::Assemble(d.programs[c], a.module_path + ".core" + std::to_string(c));
    if (!program.ok()) throw CliError("internal: generated program: " + program.error().message);
    recorder.SetTags(c, program->tags);
    simulation.AddCore(*program);
  }
  // The host: each step's batch (the lhs rows, bf16) arrives by infeed over PCIe.
  sim::TrainingLoop loop;
  loop.steps = a.steps;
  loop.steps_per_execution = a.steps_per_execution;
  loop.global_batch = d.m;
  loop.example_bytes = static_cast<uint64_t>(d.k) * 2;
  loop.input_examples_per_s = a.infeed_rate;
  loop.infeed_hbm_address = d.lhs_address;
  loop.infeed_flag = kInfeedFlag;
  simulation.SetTrainingLoop(loop);
  std::vector<eval::Value> args;
  if (!a.timing) args = LoadInputs(simulation, module, d, a.seed);
  sim::RunReport r = simulation.Run();
  if (!r.ok) throw CliError(r.error);
  recorder.Finish();

  profiler::HardwarePeaks peaks;
  peaks.flops_per_s_per_core = 2.0 * board.core.mxus * 128 * 128 * board.core.clock_hz;
  peaks.hbm_bytes_per_s_per_core = board.core.hbm_bandwidth_bytes_per_s;
  peaks.clock_hz = board.core.clock_hz;
  peaks.mxus_per_core = board.core.mxus;
  peaks.hbm_capacity_bytes_per_core = board.core.hbm_bytes;
  profiler::RunContext ctx;
  ctx.tpu_type = board.name.rfind("v2", 0) == 0 ? "TPU v2" : "TPU v3";
  ctx.batch_per_core = static_cast<int>(d.m / board.cores());
  ctx.hbm_peak_bytes_per_core = static_cast<uint64_t>(compiled->peak_hbm_bytes);
  ctx.compilations = 1;
  ctx.steps_per_execution = a.steps_per_execution;
  for (const auto& op : compiled->padding.ops) {
    profiler::PaddingInfo info;
    info.op = op.name;
    info.padded_bytes = static_cast<uint64_t>(op.padded_bytes);
    info.useful_bytes = static_cast<uint64_t>(op.logical_bytes);
    ctx.padding.push_back(info);
  }
  profiler::Report report = profiler::BuildReport(recorder, peaks, ctx);

  const profiler::Metrics& m = report.metrics;
  const profiler::StepBreakdown& b = m.step_breakdown;
  std::printf("%s on %s (%d cores): %s [%lldx%lld] x [%lldx%lld], batch %lld per core\n",
              a.module_path.c_str(), board.name.c_str(), board.cores(), d.op.c_str(),
              static_cast<long long>(d.m), static_cast<long long>(d.k), static_cast<long long>(d.k),
              static_cast<long long>(d.n), static_cast<long long>(d.m / board.cores()));
  std::printf("steps: %d (%d per execution)   simulated time: %.3f ms\n", a.steps,
              a.steps_per_execution, r.time_us / 1e3);
  std::printf("step time: %.4f ms (avg), %.4f ms (min), %.4f ms (max)   %.0f examples/s\n",
              m.step_time_ms.avg, m.step_time_ms.min, m.step_time_ms.max,
              a.steps * static_cast<double>(d.m) / (r.time_us * 1e-6));
  std::printf("MXU: %.1f%%   idle: %.1f%%   %.1f TFLOP/s per step   HBM peak per core: %.1f MiB\n",
              m.mxu_utilization_percent, m.device_idle_time_percent,
              m.step_time_ms.avg > 0 ? d.flops() / (m.step_time_ms.avg * 1e-3) / 1e12 : 0,
              compiled->peak_hbm_bytes / 1048576.0);
  std::printf(
      "step breakdown (ms): compute %.4f, infeed %.4f, all-reduce %.4f, outfeed %.4f, "
      "host overhead %.4f\n",
      b.compute_ms, b.infeed_ms, b.all_reduce_ms, b.outfeed_ms, b.host_overhead_ms);
  if (!a.timing) {
    double err = CompareWithEvaluator(simulation, module, d, args);
    std::printf("values: max |simulated - reference| = %.2e of the largest |reference| (%s)\n", err,
                err < 1e-3 ? "match" : "MISMATCH");
    if (err >= 1e-3) throw CliError("simulated values differ from the reference evaluator");
  }
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
  if (!a.trace.empty()) check(traces::WriteChromeTrace(recorder, a.trace));
  if (!a.summary.empty()) check(traces::WriteSummary(report, a.summary));
  if (!a.html.empty()) check(traces::WriteHtmlReport(report, recorder, a.html));
  return 0;
}

namespace {
const bool kRegistered = RegisterCommand(
    {"run", "compile an HLO module, simulate it on the board and profile it", RunCommand, 10});
}  // namespace

}  // namespace tpusim::cli
