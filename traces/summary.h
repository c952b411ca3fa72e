// Summary JSON with XProf's overview-page names; deterministic (fixed key order, values
// rounded to 3 decimals) and written atomically.
#pragma once

#include <string>

#include "profiler/report.h"

namespace tpusim::traces {

std::string SummaryJson(const profiler::Report& report);
// Returns "" on success, else the error (no file or tmp file is left on error).
std::string WriteSummary(const profiler::Report& report, const std::string& path);

}  // namespace tpusim::traces
