// A scalar computation (a reducer, a sort comparator, a scatter combiner) flattened into
// steps over doubles, so that applying it once per element builds no Values. Covers
// parameters, constants, elementwise unary and binary ops (compare included), select,
// clamp, convert and bitcast-convert on scalars, with a tuple of them as the root; anything
// else goes through the interpreter. Results are bit-identical to the interpreter's: each
// step calls the same scalar kernels and rounds to its result type as the op functions do.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/ir.h"

namespace tpusim::eval {

class ScalarProgram {
 public:
  // The program of `comp`, or null when it holds an instruction outside the set above.
  static std::unique_ptr<ScalarProgram> Build(const hlo::HloComputation& comp);

  // Runs on `args` (one per parameter, already of the parameter's type; at least
  // num_parameters()) into `results` (num_results() of them, one per root element).
  Status Run(std::span<const double> args, std::span<double> results) const;

  size_t num_results() const { return results_.size(); }
  size_t num_parameters() const { return num_parameters_; }

 private:
  struct Step {
    const hlo::HloInstruction* instr;
    hlo::Opcode op;
    PrimitiveType operand_type, result_type;
    int out;  // the slot written
    int operands[3];
    std::string direction;  // compare's
    bool total_order;       // compare's type=TOTALORDER
    bool binary;            // an elementwise binary op (else unary, or one handled apart)
  };
  std::vector<double> initial_;                  // one slot per instruction; constants set
  std::vector<std::pair<int, int>> parameters_;  // (slot, parameter number)
  std::vector<Step> steps_;
  std::vector<int> results_;  // slots the root reads
  size_t num_parameters_ = 0;
};

}  // namespace tpusim::eval
