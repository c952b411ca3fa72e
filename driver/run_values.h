// Values for `tpusim run`: random inputs written to every core's HBM where the compiled
// program expects them (each core its share of a data-parallel batch). The check of the
// results against the reference evaluator is driver/step_check.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/eval/value.h"
#include "sim/simulation.h"

namespace tpusim::driver {

// Elements [first, first + count) of `v` as the simulator holds them: the element type's
// bytes (s32 and u32 as their bits, bf16 rounded, 64-bit integers as their bits).
std::vector<uint8_t> EncodeElements(const eval::Value& v, int64_t first, int64_t count);

// Writes seeded random inputs; returns them (the evaluator's arguments).
std::vector<eval::Value> LoadInputs(sim::Simulation& sim, const CompiledModule& compiled,
                                    uint64_t seed);

// Host memory a value run needs, estimated from the compiler's plan: every core's peak HBM
// (the simulator keeps each touched page) times kValueRunBytesPerHbmByte, which adds the
// reference evaluator's copies (mnist-cnn: 8 x 733 MiB planned, 8.46 GB resident).
constexpr double kValueRunBytesPerHbmByte = 1.5;
double ValueRunHostBytes(const CompiledModule& compiled, int cores);

// Why a run that could compute values goes timing-only: empty when the estimate fits
// `budget_bytes`, else a note naming the estimate, the budget and the option.
std::string ValueMemoryNote(const CompiledModule& compiled, int cores, double budget_bytes);

}  // namespace tpusim::driver
