// Values for `tpusim run`: random inputs written to every core's HBM where the compiled
// program expects them (each core its share of a data-parallel batch), and the check of
// the simulated results against the reference evaluator.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/compile.h"
#include "compiler/eval/value.h"
#include "sim/simulation.h"

namespace tpusim::cli {

// Writes seeded random inputs; returns them (the evaluator's arguments).
std::vector<eval::Value> LoadInputs(sim::Simulation& sim, const CompiledModule& compiled,
                                    uint64_t seed);

// Largest |simulated - reference| over every result, relative to the largest |reference|.
double CompareWithEvaluator(sim::Simulation& sim, const CompiledModule& compiled,
                            const std::vector<eval::Value>& args);

}  // namespace tpusim::cli
