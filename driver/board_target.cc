#include "driver/board_target.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"
#include "compiler/collectives/ring_allreduce.h"

namespace tpusim::driver {

CompileTarget TargetFor(const sim::BoardConfig& board, bool infeed) {
  CompileTarget t;
  t.lowering.cores = board.cores();
  t.lowering.mxus_per_core = board.core.mxus;
  t.lowering.ring =
      collectives::TorusRing(board.ici.torus_x, board.ici.torus_y, board.cores_per_chip);
  t.lowering.infeed = infeed;
  t.lowering.hbm_bytes = board.core.hbm_bytes;
  t.lowering.peak_flops_per_s = PeakFlopsPerCore(board.core);
  t.lowering.hbm_bytes_per_s = board.core.hbm_bandwidth_bytes_per_s;
  t.lowering.link_bytes_per_s = board.ici.link_bandwidth_bytes_per_s;
  t.lowering.hop_seconds =
      (board.core.dma_latency_cycles + board.ici.latency_cycles) / board.core.clock_hz;
  // Memory planning leaves the top of HBM to the collectives' entry handshake.
  t.hbm_bytes_per_core = static_cast<int64_t>(board.core.hbm_bytes - lowering::kMailboxBytes);
  return t;
}

double PeakFlopsPerCore(const sim::CoreConfig& core) {
  return 2.0 * core.mxus * core.mxu_rows * core.mxu_cols * core.clock_hz;
}

profiler::HardwarePeaks PeaksOf(const sim::BoardConfig& board) {
  profiler::HardwarePeaks peaks;
  peaks.flops_per_s_per_core = PeakFlopsPerCore(board.core);
  peaks.hbm_bytes_per_s_per_core = board.core.hbm_bandwidth_bytes_per_s;
  peaks.clock_hz = board.core.clock_hz;
  peaks.mxus_per_core = board.core.mxus;
  peaks.hbm_capacity_bytes_per_core = board.core.hbm_bytes;
  return peaks;
}

sim::TrainingLoop TrainingLoopFor(const lowering::LoweredModule& low, const sim::BoardConfig& board,
                                  int steps, int steps_per_execution, double examples_per_s) {
  sim::TrainingLoop loop;
  loop.steps = steps;
  loop.steps_per_execution = steps_per_execution;
  // At least one example per core and step: a module without a batch input still waits
  // for its (one-byte) infeed.
  loop.global_batch = static_cast<uint64_t>(std::max<int64_t>(low.global_batch, board.cores()));
  loop.example_bytes = std::max<uint64_t>(low.example_bytes, 1);
  loop.input_examples_per_s = examples_per_s;
  loop.infeed_hbm_address = low.infeed_address;
  loop.infeed_flag = assembly::kInfeedFlag;
  return loop;
}

std::vector<isa::Program> AssembleCores(const lowering::LoweredModule& low,
                                        const std::string& name) {
  std::vector<isa::Program> programs;
  for (size_t c = 0; c < low.programs.size(); ++c) {
    auto program = isa::Assemble(low.programs[c], name + ".core" + std::to_string(c));
    if (!program.ok())
      throw std::runtime_error("internal: generated program: " + program.error().message);
    programs.push_back(std::move(program.value()));
  }
  return programs;
}

}  // namespace tpusim::driver
