// tpusim exec PROGRAM.s: assemble and run a program on core 0 of a board.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "isa/assembler.h"
#include "profiler/recorder.h"
#include "sim/simulation.h"
#include "traces/atomic_file.h"
#include "traces/chrome_trace.h"

namespace tpusim::cli {
namespace po = boost::program_options;

namespace {
nlohmann::ordered_json ReportJson(const sim::RunReport& r) {
  nlohmann::ordered_json j;
  j["cycles"] = r.cycles;
  j["time_us"] = r.time_us;
  nlohmann::ordered_json units = nlohmann::ordered_json::object();
  for (const sim::UnitReport& u : r.units)
    units[u.name] = {{"busy_percent", u.busy_percent}, {"instructions", u.instructions}};
  j["units"] = units;
  return j;
}
}  // namespace

int ExecCommand(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: tpusim exec PROGRAM.s [options]\n"
      "Runs an assembly program on core 0 and prints cycles, time and each unit's busy %.\n"
      "example: tpusim exec examples/kernels/matmul_db.s --config v3-8 --json out.json\n\n"
      "options");
  std::string program_path, config = "v3-8", json_path, trace_path;
  opts.add_options()("help,h", "show this help")("config", po::value(&config),
                                                 "v3-8, v2-8 or a JSON file (default v3-8)")(
      "json", po::value(&json_path), "also write the figures as JSON to FILE")(
      "trace", po::value(&trace_path), "write a Chrome trace (Perfetto) to FILE")(
      "timing", "timing only: skip computing values");
  po::variables_map vm;
  if (!ParseCommandLine(args, opts, "exec", &program_path, &vm)) return 0;
  if (program_path.empty()) throw CliError("missing PROGRAM.s (see tpusim exec --help)", 2);

  sim::BoardConfig board = sim::LoadConfig(config);
  auto program = isa::Assemble(ReadFileOrThrow(program_path), program_path);
  if (!program.ok()) throw CliError(program.error().message);

  profiler::Recorder recorder(
      profiler::RecorderOptions{.num_cores = 1, .mxus_per_core = board.core.mxus});
  recorder.SetTags(0, program->tags);
  sim::RunOptions options;
  options.functional = !vm.count("timing");
  if (!trace_path.empty()) options.sink = &recorder;
  sim::Simulation simulation(board, options);
  simulation.AddCore(*program);
  sim::RunReport r = simulation.Run();
  if (!r.ok) throw CliError(r.error);

  std::printf("program: %s (%zu instructions) on %s core 0, %s\n", program_path.c_str(),
              program->code.size(), board.name.c_str(),
              options.functional ? "functional" : "timing only");
  std::printf("cycles: %lld\ntime: %.3f us\n", static_cast<long long>(r.cycles), r.time_us);
  std::printf("%-6s %8s %13s\n", "unit", "busy %", "instructions");
  for (const sim::UnitReport& u : r.units)
    std::printf("%-6s %8.1f %13llu\n", u.name.c_str(), u.busy_percent,
                static_cast<unsigned long long>(u.instructions));
  if (!json_path.empty()) {
    std::string err = traces::WriteFileAtomic(json_path, ReportJson(r).dump(2) + "\n");
    if (!err.empty()) throw CliError(err);
  }
  if (!trace_path.empty()) {
    recorder.Finish();
    std::string err = traces::WriteChromeTrace(recorder, trace_path);
    if (!err.empty()) throw CliError(err);
  }
  return 0;
}

int ConfigsCommand(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: tpusim configs\nLists the hardware presets and every configuration "
                 "key with its default.\nexample: tpusim configs\n";
    return 0;
  }
  if (!args.empty()) throw CliError("unexpected argument '" + args[0] + "'", 2);
  std::cout << "presets:";
  for (const std::string& name : sim::PresetNames()) std::cout << " " << name;
  std::cout << "\n\n" << sim::ConfigKeysMarkdown();
  return 0;
}

namespace {
const bool kRegistered =
    RegisterCommand({"exec", "run an ISA assembly program on one TensorCore", ExecCommand, 30});
const bool kConfigsRegistered = RegisterCommand(
    {"configs", "list the hardware presets and every configuration key", ConfigsCommand, 60});
}  // namespace

}  // namespace tpusim::cli
