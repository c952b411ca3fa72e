// Checks a Chrome trace against the rules Perfetto and chrome://tracing rely on
// (shared/DESIGN.md section 4). Used by tests on every exported trace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpusim::traces {

// Returns the violations found; empty means the trace is valid.
std::vector<std::string> ValidateChromeTrace(std::string_view text);
std::vector<std::string> ValidateChromeTraceFile(const std::string& path);

}  // namespace tpusim::traces
