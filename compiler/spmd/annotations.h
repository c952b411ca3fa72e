// The shardings a global program states: `sharding=` attributes and Shardy's frontend
// attributes (xla.sdy.sharding, xla.sdy.in_shardings / out_shardings over the module's
// xla.sdy.meshes).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/sharding.h"

namespace tpusim::spmd {

// The instruction's `sharding=` attribute, else its xla.sdy.sharding frontend attribute;
// nullopt when it has neither. Errors name the instruction.
hlo::Result<std::optional<hlo::HloSharding>> StatedSharding(const hlo::HloModule& m,
                                                            const hlo::HloInstruction& i);

// The per-value shardings of frontend attribute `key` (xla.sdy.in_shardings or
// xla.sdy.out_shardings of shard_map's custom-calls); empty when absent.
hlo::Result<std::vector<hlo::HloSharding>> SdyShardings(const hlo::HloModule& m,
                                                        const hlo::HloInstruction& i,
                                                        std::string_view key);

// The value of frontend attribute `key` (unescaped), or nullopt.
std::optional<std::string> FrontendAttribute(const hlo::HloInstruction& i, std::string_view key);

// Whether some instruction states a sharding that splits a value (tuple elements included),
// a sharding that does not parse (reported when partitioning), or is a sharding custom-call.
bool StatesSplit(const hlo::HloModule& m);

// Whether the module is XLA's scheduled output (is_scheduled=true): per-device already.
bool IsScheduled(const hlo::HloModule& m);

// The custom-call's target without quotes ("" for other ops).
std::string CustomCallTarget(const hlo::HloInstruction& i);

}  // namespace tpusim::spmd
