// Values for `tpusim run`: random inputs written to every core's HBM where the compiled
// program expects them (each core its share of a data-parallel batch), and the check of
// the simulated results against the reference evaluator.
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

struct ValueCheck {
  double error = 0;  // largest |simulated - reference| over every result / largest |reference|
  // The result whose own relative error is largest: its index, the root operand it comes
  // from (empty for a non-tuple root) and its largest |simulated - reference| / |reference|.
  size_t worst_output = 0;
  std::string worst_output_name;
  double worst_output_error = 0;
  int fed_back = 0;  // outputs written over their parameters (donated): the next step reads them
  // Output 0 when it is a scalar (a training step's loss): the reference after each step,
  // and the simulated value after the last.
  std::vector<double> reference_output0;
  double simulated_output0 = 0;
};

// Runs the evaluator for `steps` steps, feeding each donated output back into its parameter
// as the simulated program does, and compares the simulated results of the last step.
ValueCheck CompareWithEvaluator(sim::Simulation& sim, const CompiledModule& compiled,
                                std::vector<eval::Value> args, int steps = 1);

}  // namespace tpusim::cli
