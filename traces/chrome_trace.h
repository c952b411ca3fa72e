// Chrome trace / Perfetto JSON export of a Recorder's event window (docs/profiler.md,
// shared/DESIGN.md section 4). Streams events to disk and writes atomically.
#pragma once

#include <map>
#include <string>

#include "profiler/op_profile.h"
#include "profiler/recorder.h"

namespace tpusim::traces {

struct ChromeTraceOptions {
  bool counters = true;  // "MXU utilization" and "Idle time" counter tracks
  // Framework op and source of each HLO op, by name: args of its events on the XLA Ops track.
  std::map<std::string, profiler::OpOrigin> op_origins;
};

// Writes the trace to `path` (via path.tmp). Returns "" on success, else the error; on
// error no file (and no tmp file) is left behind.
std::string WriteChromeTrace(const profiler::Recorder& rec, const std::string& path,
                             const ChromeTraceOptions& options = {});

}  // namespace tpusim::traces
