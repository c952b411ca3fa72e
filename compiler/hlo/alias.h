// The module header's input_output_alias: which entry parameters an output may take over
// (buffer donation, as jax.jit(..., donate_argnums=...) and TF's resource updates emit).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/hlo/status.h"

namespace tpusim::hlo {

struct InputOutputAlias {
  std::vector<int64_t> output_index;  // shape index into the entry result ({} = all of it)
  int64_t parameter = 0;              // entry parameter number
  std::vector<int64_t> parameter_index;
  bool must_alias = false;
};

// Parses the text between the braces of `input_output_alias={...}`, e.g.
// "{1}: (2, {}, may-alias), {2}: (3, {}, must-alias)". An empty text has no aliases.
Result<std::vector<InputOutputAlias>> ParseInputOutputAlias(std::string_view text);

}  // namespace tpusim::hlo
