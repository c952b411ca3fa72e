// Values for `tpusim run`: random inputs written to every core's HBM where the compiled
// program expects them (each core its share of a data-parallel batch). The check of the
// results against the reference evaluator is cli/step_check.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/eval/value.h"
#include "sim/simulation.h"

namespace tpusim::cli {

// Writes seeded random inputs; returns them (the evaluator's arguments).
std::vector<eval::Value> LoadInputs(sim::Simulation& sim, const CompiledModule& compiled,
                                    uint64_t seed);

}  // namespace tpusim::cli
