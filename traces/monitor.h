// The TPU monitor text, in the real profiler's wording (shared/DESIGN.md section 3),
// computed over a window of simulated time so that the CLI can print it every interval.
#pragma once

#include <string>

#include "profiler/recommendations.h"
#include "profiler/recorder.h"

namespace tpusim::traces {

// Call rec.Flush(window_end) first when the run is still going. The timestamp is the
// simulated time at window_end (HH:MM:SS.uuuuuu), not the wall clock.
std::string FormatMonitor(const profiler::Recorder& rec, const profiler::RunContext& ctx,
                          profiler::TimeFs window_start, profiler::TimeFs window_end);

}  // namespace tpusim::traces
