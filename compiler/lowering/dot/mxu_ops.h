// Dot and convolution as MXU work: the [batch] x [m,k] x [k,n] matmul a core performs,
// padded to the MXU kernel's tiles (matmul_kernel.h). A convolution is an implicit GEMM:
// m = output batch x spatial, n = output features, k = taps x input features per group.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/lower.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

struct MxuWork {
  int64_t batch = 1, m = 0, k = 0, n = 0;  // per core, before padding
  int passes = 1;      // bf16 passes: operand_precision DEFAULT 1, HIGH 3, HIGHEST 6
  double flops = 0;    // useful: 2 * batch * m * k * n
  bool exact = false;  // a plain [M,K] x [K,N] bf16 dot the kernel computes exactly
  std::string note;
};

// An array of f32 or bf16 elements: what the MXU kernels read.
inline bool FloatOrBf16(const hlo::Shape& s) {
  return s.IsArray() && (s.type == hlo::PrimitiveType::kF32 || s.type == hlo::PrimitiveType::kBF16);
}

MxuWork DotWork(const hlo::HloInstruction& dot);
MxuWork ConvolutionWork(const hlo::HloInstruction& conv);

// The kernel for `w` with operands at HBM a, b and the result at c (padding noted in w).
std::string MxuKernel(MxuWork& w, uint64_t a, uint64_t b, uint64_t c, const std::string& tag,
                      int mxus);

// `instr` (a dot, convolution or fusion around one) as the kernel for `w` over its first two
// operands; fills `op` (MXU, FLOPs, bytes, exact, note). An exact one waits for its last
// result copies before the next kernel.
std::string MxuOp(MxuWork w, const hlo::HloInstruction& instr, const OpContext& c, LoweredOp& op);

}  // namespace tpusim::lowering
