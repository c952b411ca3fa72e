// The one-screen result of `tpusim run`: what ran, step time and throughput, the two
// gauges (MXU %, idle %), the step breakdown, how the ops were lowered.
#pragma once

#include <string>

#include "compiler/compile.h"
#include "profiler/report.h"
#include "sim/config.h"
#include "sim/simulation.h"

namespace tpusim::cli {

struct RunShape {
  std::string module_path;
  int steps = 1, steps_per_execution = 1;
};

void PrintResult(const RunShape& run, const sim::BoardConfig& board, const CompiledModule& compiled,
                 const sim::RunReport& r, const profiler::Report& report);

}  // namespace tpusim::cli
