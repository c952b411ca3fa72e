// Global values and their per-device parts under a sharding: what a partitioned module's
// device holds of each argument and result of the global program it came from.
#pragma once

#include <cstdint>

#include "compiler/eval/value.h"
#include "compiler/hlo/ir.h"
#include "compiler/hlo/sharding.h"

namespace tpusim::spmd {

// Whether `partitioned` is the per-device program the partitioner made of a global one.
bool IsPartitioned(const hlo::HloModule& partitioned);

// The layout of entry parameter `number` / of result leaf `leaf` the partitioner recorded
// (HloModule::spmd_*, else the entry's `sharding` attributes); replicated where none is.
hlo::HloSharding ParameterSharding(const hlo::HloModule& partitioned, int64_t number);
hlo::HloSharding OutputSharding(const hlo::HloModule& partitioned, size_t leaf);

// The part of array `global` that `device` holds under `s` (all of it unless tiled).
eval::Value TileOf(const eval::Value& global, const hlo::HloSharding& s, int64_t device);
// Writes `tile` where `device`'s part of `global` lies.
void PutTile(eval::Value& global, const eval::Value& tile, const hlo::HloSharding& s,
             int64_t device);

}  // namespace tpusim::spmd
