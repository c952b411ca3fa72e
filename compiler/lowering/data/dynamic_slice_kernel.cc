#include "compiler/lowering/data/dynamic_slice_kernel.h"

#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/data/move_kernel.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

constexpr int kOffsetReg = 20;  // the block's byte offset in the operand (or result)

std::vector<int64_t> ByteStrides(const hlo::Shape& s) {
  std::vector<int64_t> st(s.dims.size(), 4);
  for (size_t i = s.dims.size(); i-- > 1;) st[i - 1] = st[i] * s.dims[i];
  return st;
}

bool Word(const hlo::Shape& s) { return s.IsArray() && hlo::PrimitiveTypeBits(s.type) == 32; }

// 16-bit arrays whose block takes whole rows of an even length move as 32-bit words: both
// shapes viewed so. False when they cannot.
bool AsWords(hlo::Shape& whole, hlo::Shape& block) {
  if (!whole.IsArray() || !block.IsArray() || hlo::PrimitiveTypeBits(whole.type) != 16 ||
      whole.type != block.type || whole.dims.empty() || whole.dims.size() != block.dims.size() ||
      whole.dims.back() != block.dims.back() || whole.dims.back() % 2 != 0)
    return false;
  for (hlo::Shape* s : {&whole, &block}) s->type = hlo::PrimitiveType::kU32, s->dims.back() /= 2;
  return true;
}

// r20 = sum over d of clamp(start_d, 0, dims_d - sizes_d) * stride_d; starts from
// `first` on. Each start is an SMEM word (by DMA from its buffer) or a constant.
std::string Offset(const HloInstruction& instr, size_t first, const hlo::Shape& whole,
                   const hlo::Shape& block, const OpContext& c) {
  std::ostringstream s;
  const std::vector<int64_t> strides = ByteStrides(whole);
  s << ".desc start rows=1 row_bytes=4 src_stride=0 dst_stride=0\n    sflag f2, 0\n";
  int loads = 0;
  for (size_t d = 0; d < whole.dims.size(); ++d) {
    const HloInstruction* start = instr.operand(first + d);
    if (start->opcode() == Opcode::kConstant) continue;
    s << assembly::LoadAddress(1, c.address(start), 9) << "    li r2, " << 4 * d
      << "\n    dma.hs r2, r1, start, f2\n";
    ++loads;
  }
  if (loads) s << "    wait seq, f2, " << loads << "\n";
  s << "    li r" << kOffsetReg << ", 0\n    li r6, 0\n";
  for (size_t d = 0; d < whole.dims.size(); ++d) {
    const HloInstruction* start = instr.operand(first + d);
    const std::string l = "start" + std::to_string(d);
    if (start->opcode() == Opcode::kConstant)
      s << "    li r5, " << static_cast<int32_t>(start->literal().ints.at(0)) << "\n";
    else
      s << "    sld r5, r6, " << 4 * d << "\n";
    s << "    li r7, " << std::max<int64_t>(0, whole.dims[d] - block.dims[d]) << "\n"
      << "    bge r5, r6, " << l << "_lo\n    mov r5, r6\n"
      << l << "_lo:\n    bge r7, r5, " << l << "_hi\n    mov r5, r7\n"
      << l << "_hi:\n"
      << assembly::LoadAddress(8, static_cast<uint64_t>(strides[d]), 9) << "    mul r5, r5, r8\n"
      << "    add r" << kOffsetReg << ", r" << kOffsetReg << ", r5\n";
  }
  return s.str();
}

}  // namespace

std::string DynamicSliceKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  const bool update = instr.opcode() == Opcode::kDynamicUpdateSlice;
  if (!update && instr.opcode() != Opcode::kDynamicSlice) return "";
  hlo::Shape whole = instr.operand(0)->shape();
  hlo::Shape block = update ? instr.operand(1)->shape() : instr.shape();
  const size_t first = update ? 2 : 1;
  if (!(Word(whole) && Word(block)) && !AsWords(whole, block)) return "";
  if (whole.dims.empty() || instr.operand_count() != first + whole.dims.size() ||
      block.ElementCount() == 0)
    return "";
  for (size_t d = 0; d < whole.dims.size(); ++d) {
    const HloInstruction* start = instr.operand(first + d);
    if (!start->shape().IsScalar() || start->shape().type != hlo::PrimitiveType::kS32 ||
        (start->opcode() == Opcode::kConstant && start->literal().ints.empty()))
      return "";
  }
  // Constants have no HBM buffer (kernels take them as immediates): a slice of a constant
  // table stays timing-only (it read whatever lay at address 0 and was marked exact).
  if (instr.operand(0)->opcode() == Opcode::kConstant ||
      (update && instr.operand(1)->opcode() == Opcode::kConstant))
    return "";
  const uint64_t out = c.address(&instr), in = c.address(instr.operand(0));
  StridedMove move;
  move.dims = block.dims;
  std::string code;
  try {
    if (!update) {
      move.src = in, move.dst = out, move.src_reg = kOffsetReg;
      move.src_strides = ByteStrides(whole), move.dst_strides = ByteStrides(block);
      code = MoveKernel({move}, nullptr, instr.name());
    } else {
      if (in != out) {  // the operand into the result, all copies landed before the update
        StridedMove copy{whole.dims, ByteStrides(whole), ByteStrides(whole), in, out};
        code = assembly::ScopeKernel(MoveKernel({copy}, nullptr, instr.name()), "copy_");
      }
      move.src = c.address(instr.operand(1)), move.dst = out, move.dst_reg = kOffsetReg;
      move.src_strides = ByteStrides(block), move.dst_strides = ByteStrides(whole);
      code += assembly::ScopeKernel(MoveKernel({move}, nullptr, instr.name()), "update_");
    }
  } catch (const std::invalid_argument&) {
    return "";
  }
  op.kind = KernelKind::kDma;
  op.hbm_bytes = 2 * ByteSize(block) + (update && in != out ? 2 * ByteSize(whole) : 0);
  op.exact = true;
  return ".tag \"" + instr.name() + "\"\n" + Offset(instr, first, whole, block, c) + code;
}

}  // namespace tpusim::lowering
