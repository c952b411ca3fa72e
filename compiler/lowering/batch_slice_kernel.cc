#include "compiler/lowering/batch_slice_kernel.h"

#include <algorithm>
#include <sstream>

#include "compiler/lowering/asm_util.h"
#include "compiler/lowering/move_kernel.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// Bytes of one batch row (the dimensions after the leading one).
int64_t RowBytes(const hlo::Shape& s) {
  int64_t n = hlo::PrimitiveTypeBits(s.type) / 8;
  for (size_t d = 1; d < s.dims.size(); ++d) n *= s.dims[d];
  return n;
}

// r5 = the start of the leading dimension, clamped to [0, dim - size] as XLA does.
std::string Start(const HloInstruction& instr, const OpContext& c, int64_t most) {
  std::ostringstream s;
  s << "    li r6, 0\n";
  if (instr.opcode() == Opcode::kSlice) {  // static: in range (the verifier checked)
    s << "    li r5, " << instr.slice()->at(0).start << "\n";
    return s.str();
  }
  const HloInstruction* start = instr.operand(1);
  if (start->opcode() == Opcode::kConstant) {
    s << "    li r5, " << static_cast<int32_t>(start->literal().ints.at(0)) << "\n";
  } else {
    s << ".desc start rows=1 row_bytes=4 src_stride=0 dst_stride=0\n"
      << LoadAddress(1, c.address(start), 9) << "    dma.hs r6, r1, start, f2\n"
      << "    wait seq, f2, 1\n    sld r5, r6, 0\n";
  }
  s << "    li r7, " << most << "\n    bge r5, r6, start_lo\n    mov r5, r6\nstart_lo:\n"
    << "    bge r7, r5, start_hi\n    mov r5, r7\nstart_hi:\n";
  return s.str();
}

// Core `core`'s program: zeros into the result, then the window's rows in [lo, lo + rows)
// copied to their place, as at most log2(rows) + 1 copies of 2^b rows each.
std::string CoreKernel(const HloInstruction& instr, const OpContext& c, int core) {
  const hlo::Shape &whole = instr.operand(0)->shape(), &block = instr.shape();
  const int64_t size = block.dims[0], rows = whole.dims[0] / c.cores, lo = core * rows;
  const int64_t row = RowBytes(whole);
  const uint64_t in = c.address(instr.operand(0)), out = c.address(&instr);
  MoveFill zeros{0.0f, 0, out, size * row, std::nullopt};
  std::ostringstream s;
  s << ScopeKernel(MoveKernel({}, &zeros, instr.name()), "zero_")
    << Start(instr, c, whole.dims[0] - size)
    // r14 = max(start, lo), r15 = min(start + size, lo + rows): the rows this core holds.
    << "    li r12, " << lo << "\n    mov r14, r5\n    bge r14, r12, first_ok\n"
    << "    mov r14, r12\nfirst_ok:\n    addi r15, r5, " << size << "\n    li r13, " << lo + rows
    << "\n    bge r13, r15, end_ok\n    mov r15, r13\nend_ok:\n"
    << "    bge r14, r15, done\n    sub r16, r15, r14\n"
    << LoadAddress(8, static_cast<uint64_t>(row), 9)
    << "    sub r17, r14, r12\n    mul r17, r17, r8\n"
    << LoadAddress(1, in, 9) << "    add r1, r1, r17\n"
    << "    sub r18, r14, r5\n    mul r18, r18, r8\n"
    << LoadAddress(2, out, 9) << "    add r2, r2, r18\n";
  int64_t top = 1;
  while (top * 2 <= rows) top *= 2;
  for (int64_t b = top; b >= 1; b /= 2) {
    const std::string d = "rows" + std::to_string(b);
    s << ".desc " << d << " rows=" << b << " row_bytes=" << row << " src_stride=" << row
      << " dst_stride=" << row << "\n    andi r10, r16, " << b << "\n    beq r10, r6, skip" << b
      << "\n    dma.hh r2, r1, " << d << ", f4\n    wait seq, f4, 1\n"
      << LoadAddress(10, static_cast<uint64_t>(b * row), 11)
      << "    add r1, r1, r10\n    add r2, r2, r10\nskip" << b << ":\n";
  }
  s << "done:\n";
  return s.str();
}

}  // namespace

bool IsBatchSlice(const HloInstruction& instr, int64_t split) {
  const bool fixed = instr.opcode() == Opcode::kSlice;
  if (split <= 0 || (!fixed && instr.opcode() != Opcode::kDynamicSlice)) return false;
  const hlo::Shape &whole = instr.operand(0)->shape(), &block = instr.shape();
  if (!whole.IsArray() || !block.IsArray() || whole.dims.empty() || whole.dims[0] != split ||
      std::count(whole.dims.begin(), whole.dims.end(), split) != 1 ||
      std::count(block.dims.begin(), block.dims.end(), split) != 0 ||
      block.dims.size() != whole.dims.size() || block.dims[0] == 0 ||
      instr.operand_count() != (fixed ? 1 : 1 + whole.dims.size()) || RowBytes(whole) % 4 != 0)
    return false;
  for (size_t d = 1; d < whole.dims.size(); ++d)
    if (block.dims[d] != whole.dims[d]) return false;
  if (fixed) {  // rows [start, limit) of the batch, every row whole
    const hlo::SliceBounds* b = instr.slice();
    return b && b->size() == whole.dims.size() && b->at(0).stride == 1;
  }
  const HloInstruction* start = instr.operand(1);
  return start->shape().IsScalar() && start->shape().type == hlo::PrimitiveType::kS32 &&
         !(start->opcode() == Opcode::kConstant && start->literal().ints.empty());
}

std::vector<std::string> BatchSliceKernels(const HloInstruction& instr, const OpContext& c,
                                           LoweredOp& op) {
  if (!IsBatchSlice(instr, c.split)) return {};
  std::vector<std::string> programs;
  for (int core = 0; core < c.cores; ++core)
    programs.push_back(".tag \"" + instr.name() + "\"\n" + CoreKernel(instr, c, core));
  const uint64_t block = BytesPerCore(instr.shape(), 0, 1);
  op.kind = KernelKind::kDma;
  op.hbm_bytes =
      block + 2 * std::min(block, BytesPerCore(instr.operand(0)->shape(), c.split, c.cores));
  op.exact = true;
  return programs;
}

}  // namespace tpusim::lowering
