// tpusim compile MODULE.hlo: run the pass pipeline and print (or write) the optimized HLO
// or the ISA programs the board would run.
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/hlo_pipeline.h"
#include "driver/board_target.h"
#include "sim/config.h"
#include "traces/atomic_file.h"

namespace tpusim::cli {
namespace po = boost::program_options;

int CompileCommand(const std::vector<std::string>& argv) {
  std::string module_path, emit = "ir", dump_dir, out_path, config = "v3-8";
  po::options_description opts(
      "usage: tpusim compile MODULE.hlo [options]\n"
      "Runs the compiler's pass pipeline on an XLA HLO module and prints the optimized HLO\n"
      "(--emit ir) or the ISA program of core 0 (--emit isa).\n"
      "example: tpusim compile examples/hlo/mlp_train_step.hlo --dump-passes out/passes\n\n"
      "options");
  opts.add_options()("help,h", "show this help")("emit", po::value(&emit),
                                                 "ir (optimized HLO, default) or isa")(
      "dump-passes", po::value(&dump_dir), "write the IR after every pass into DIR")(
      "output,o", po::value(&out_path), "write to FILE instead of standard output")(
      "config", po::value(&config), "board: its cores partition a sharded module (default v3-8)")(
      "no-kernel-windows", "--emit isa: each kernel drains before the next one issues");
  po::variables_map vm;
  if (!ParseCommandLine(argv, opts, "compile", &module_path, &vm)) return 0;
  if (module_path.empty()) throw CliError("missing MODULE.hlo (see tpusim compile --help)", 2);
  if (emit != "ir" && emit != "isa")
    throw CliError("--emit must be ir or isa, not '" + emit + "'", 2);

  auto parsed = hlo::ParseHlo(ReadFileOrThrow(module_path), module_path);
  if (!parsed.ok()) throw CliError(parsed.status().message());
  if (auto st = hlo::VerifyModule(parsed.value()); !st.ok()) throw CliError(st.message());
  std::string text;
  if (emit == "isa") {
    sim::BoardConfig board = sim::LoadConfig(config);
    CompileTarget target = driver::TargetFor(board);
    target.dump_dir = dump_dir;
    target.lowering.kernel_windows = !vm.count("no-kernel-windows");
    auto compiled = CompileForBoard(ReadFileOrThrow(module_path), module_path, target);
    if (!compiled.ok()) throw CliError(compiled.status().message());
    const lowering::LoweredModule& low = compiled.value()->lowered;
    text = "# " + module_path + ": core 0 of " + std::to_string(low.programs.size()) + "\n";
    for (const lowering::LoweredOp& op : low.ops)
      if (!op.note.empty()) text += "# %" + op.name + ": " + op.note + "\n";
    text += low.programs[0];
  } else {
    // A sharded global program is partitioned over the board's cores, as `run` does.
    CompileTarget target = driver::TargetFor(sim::LoadConfig(config));
    target.dump_dir = dump_dir;
    const CompileOptions options = CompileOptionsFor(target);
    auto compiled = CompileToHlo(parsed.value(), options);
    if (!compiled.ok()) throw CliError(compiled.status().message());
    text = compiled->hlo;
  }
  if (out_path.empty()) {
    std::cout << text;
  } else if (std::string err = traces::WriteFileAtomic(out_path, text); !err.empty()) {
    throw CliError(err);
  }
  return 0;
}

namespace {
const bool kRegistered = RegisterCommand(
    {"compile", "run the pass pipeline; print the optimized HLO or the ISA", CompileCommand, 20});
}  // namespace

}  // namespace tpusim::cli
