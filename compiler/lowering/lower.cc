#include "compiler/lowering/lower.h"

#include <stdexcept>

#include "compiler/lowering/matmul_kernel.h"

namespace tpusim::lowering {
namespace {

hlo::Status NotLowered(const hlo::HloInstruction& instr, const std::string& why) {
  return hlo::Status::Error("%" + instr.name() + " (" +
                            std::string(hlo::OpcodeName(instr.opcode())) +
                            "): not lowered to the ISA yet: " + why);
}

// The parameter behind `instr`, looking through converts (the MXU reads bf16 either way).
const hlo::HloInstruction* ParameterBehind(const hlo::HloInstruction* instr) {
  while (instr->opcode() == hlo::Opcode::kConvert) instr = instr->operand(0);
  return instr->opcode() == hlo::Opcode::kParameter ? instr : nullptr;
}

}  // namespace

hlo::Result<LoweredDot> LowerDot(const hlo::HloModule& module, int cores, int infeed_flag,
                                 int mxus_per_core) {
  const hlo::HloComputation* entry = module.entry();
  const hlo::HloInstruction* root = entry->root();
  if (root->opcode() == hlo::Opcode::kTuple && root->operands().size() == 1)
    root = root->operand(0);
  if (root->opcode() != hlo::Opcode::kDot)
    return NotLowered(*root, "tpusim lowers a module whose result is a single dot today");
  const hlo::IntList* lc = root->GetIntList("lhs_contracting_dims");
  const hlo::IntList* rc = root->GetIntList("rhs_contracting_dims");
  if (root->GetIntList("lhs_batch_dims") || root->operand(0)->shape().rank() != 2 ||
      root->operand(1)->shape().rank() != 2 || !lc || !rc || *lc != hlo::IntList{1} ||
      *rc != hlo::IntList{0})
    return NotLowered(*root, "only [M,K] x [K,N] dots (contracting lhs 1, rhs 0) are lowered");
  const hlo::HloInstruction* lhs = ParameterBehind(root->operand(0));
  const hlo::HloInstruction* rhs = ParameterBehind(root->operand(1));
  if (!lhs || !rhs) return NotLowered(*root, "dot operands must be parameters");
  LoweredDot d;
  d.op = root->name();
  d.m = root->operand(0)->shape().dims[0];
  d.k = root->operand(0)->shape().dims[1];
  d.n = root->operand(1)->shape().dims[1];
  d.cores = cores;
  d.lhs_parameter = static_cast<int>(lhs->parameter_number());
  d.rhs_parameter = static_cast<int>(rhs->parameter_number());
  if (d.m % cores)
    return NotLowered(*root, "the batch dimension " + std::to_string(d.m) +
                                 " does not split evenly over " + std::to_string(cores) + " cores");
  const int64_t rows = d.m / cores;
  d.lhs_address = 0;
  d.rhs_address = (static_cast<uint64_t>(rows * d.k * 2) + 0xfffff) & ~uint64_t{0xfffff};
  d.out_address = (d.rhs_address + d.k * d.n * 2 + 0xfffff) & ~uint64_t{0xfffff};
  try {
    std::string program = MatmulKernel(MatmulShape{rows, d.k, d.n, d.lhs_address, d.rhs_address,
                                                   d.out_address, d.op, mxus_per_core});
    if (infeed_flag >= 0)
      program = "    wait seq, f" + std::to_string(infeed_flag) + ", 1   # infeed\n" + program;
    d.programs.assign(cores, program);
  } catch (const std::invalid_argument& e) {
    return NotLowered(*root, std::string(e.what()) + " (per core: " + std::to_string(rows) +
                                 " rows); pad the shapes");
  }
  return d;
}

}  // namespace tpusim::lowering
