// The one-screen result of `tpusim run`: what ran, step time and throughput, the two
// gauges (MXU %, idle %), the step breakdown, how the ops were lowered.
#pragma once

#include <string>
#include <vector>

#include "compiler/compile.h"
#include "driver/step_check.h"
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

// The value check of every step (step_check.h); throws CliError when a step's results
// differ from the reference, after naming the worst one.
void ReportValues(const std::vector<driver::ValueCheck>& steps, int fed_back);

}  // namespace tpusim::cli
