// What the compiler, the simulator and the profiler need to know of one simulated board,
// derived from its configuration (sim/configs): the compiler's target (cores, MXUs, HBM,
// collective ring), the profiler's peaks, and the host loop that feeds a compiled step.
// Shared by `tpusim`, the benchmarks and the tests.
#pragma once

#include <string>
#include <vector>

#include "compiler/compile.h"
#include "isa/assembler.h"
#include "profiler/metrics.h"
#include "sim/config.h"
#include "sim/host.h"

namespace tpusim::driver {

// The compiler's target for `board`; `infeed`: each step first waits for its batch.
CompileTarget TargetFor(const sim::BoardConfig& board, bool infeed = true);

// Peak MXU FLOP/s of one core: 2 x MXUs x 128 x 128 multiply-adds per cycle.
double PeakFlopsPerCore(const sim::CoreConfig& core);

// The roofline numbers the profiler's metrics divide by.
profiler::HardwarePeaks PeaksOf(const sim::BoardConfig& board);

// The host loop of `steps` training steps of a compiled module, `steps_per_execution` per
// dispatch, its batch fed by infeed at `examples_per_s` (0: unbounded).
sim::TrainingLoop TrainingLoopFor(const lowering::LoweredModule& low, const sim::BoardConfig& board,
                                  int steps, int steps_per_execution, double examples_per_s = 0);

// Assembles every core's program; `name` + ".coreN" names each in errors. Throws
// std::runtime_error when a generated program does not assemble (a compiler bug).
std::vector<isa::Program> AssembleCores(const lowering::LoweredModule& low,
                                        const std::string& name);

}  // namespace tpusim::driver
