// Parses HLO text exactly as XLA prints it (HloModule::ToString, --xla_dump_to, JAX
// .as_text('hlo')). Errors read "file:line:column: message"; no input makes it crash.
#pragma once

#include <string_view>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"

namespace tpusim::hlo {

inline constexpr int kMaxNestingDepth = 256;

Result<HloModule> ParseHlo(std::string_view text, std::string_view filename = "<hlo>");

}  // namespace tpusim::hlo
