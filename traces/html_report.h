// A self-contained TPU-monitor HTML page (inline CSS, JS and SVG; no network): MXU % and
// idle % over time, the step breakdown, the op profile and the recommendations. Every
// figure is also in the DOM as text, with ids for tests and scripts.
#pragma once

#include <string>

#include "profiler/recorder.h"
#include "profiler/report.h"

namespace tpusim::traces {

std::string HtmlReport(const profiler::Report& report, const profiler::Recorder& rec);
// Returns "" on success, else the error (written atomically).
std::string WriteHtmlReport(const profiler::Report& report, const profiler::Recorder& rec,
                            const std::string& path);

}  // namespace tpusim::traces
