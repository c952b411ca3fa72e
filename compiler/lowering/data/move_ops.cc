#include "compiler/lowering/data/move_ops.h"
#include "compiler/lowering/driver/emitters.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "compiler/lowering/data/move_kernel.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// Byte strides of a row-major array.
std::vector<int64_t> Strides(const hlo::Shape& s, int64_t elem) {
  std::vector<int64_t> st(s.dims.size(), elem);
  for (size_t i = s.dims.size(); i-- > 1;) st[i - 1] = st[i] * s.dims[i];
  return st;
}

int64_t ElemBytesOf(const hlo::Shape& s) { return hlo::PrimitiveTypeBits(s.type) / 8; }

// The output read from one operand: element i of the output at src + sum(i_d * src[d]).
StridedMove Whole(const HloInstruction& instr, const OpContext& c, int64_t elem) {
  StridedMove m;
  m.dims = instr.shape().dims, m.elem_bytes = elem;
  m.dst_strides = Strides(instr.shape(), elem);
  m.src = c.address(instr.operand(0)), m.dst = c.address(&instr);
  const hlo::Shape& in = instr.operand(0)->shape();
  const std::vector<int64_t> in_st = Strides(in, elem);
  const std::vector<int64_t>* dims = instr.dimensions();
  m.src_strides.assign(m.dims.size(), 0);
  switch (instr.opcode()) {
    case Opcode::kCopy:
      m.src_strides = in_st;
      break;
    case Opcode::kTranspose:  // output dim k is input dim perm[k]
      for (size_t k = 0; k < m.dims.size(); ++k) m.src_strides[k] = in_st[(*dims)[k]];
      break;
    case Opcode::kBroadcast:  // operand dim k is output dim dims[k]; the others repeat
      for (size_t k = 0; k < dims->size(); ++k) m.src_strides[(*dims)[k]] = in_st[k];
      break;
    case Opcode::kReverse:
      m.src_strides = in_st;
      for (int64_t d : *dims) {
        m.src += static_cast<uint64_t>((in.dims[d] - 1) * in_st[d]);
        m.src_strides[d] = -in_st[d];
      }
      break;
    case Opcode::kSlice:
      for (size_t d = 0; d < m.dims.size(); ++d) {
        const hlo::SliceDim& b = (*instr.slice())[d];
        m.src += static_cast<uint64_t>(b.start * in_st[d]);
        m.src_strides[d] = b.stride * in_st[d];
      }
      break;
    default:
      throw std::invalid_argument("not a strided move");
  }
  return m;
}

// Each operand into its place along the concatenated dimension.
std::vector<StridedMove> Concatenate(const HloInstruction& instr, const OpContext& c,
                                     int64_t elem) {
  const int64_t dim = (*instr.dimensions())[0];
  const std::vector<int64_t> out_st = Strides(instr.shape(), elem);
  std::vector<StridedMove> moves;
  int64_t offset = 0;
  for (const HloInstruction* o : instr.operands()) {
    if (o->shape().ElementCount() > 0)
      moves.push_back(StridedMove{o->shape().dims, Strides(o->shape(), elem), out_st, c.address(o),
                                  c.address(&instr) + static_cast<uint64_t>(offset * out_st[dim]),
                                  elem});
    offset += o->shape().dims[dim];
  }
  return moves;
}

// The operand at its padded positions (the fill writes the value everywhere first).
StridedMove PadInterior(const HloInstruction& instr, const OpContext& c, int64_t elem) {
  const hlo::Shape& in = instr.operand(0)->shape();
  const std::vector<int64_t> out_st = Strides(instr.shape(), elem);
  StridedMove m{in.dims, Strides(in, elem), out_st, c.address(instr.operand(0)), c.address(&instr),
                elem};
  for (size_t d = 0; d < in.dims.size(); ++d) {
    const hlo::PadDim& p = (*instr.padding())[d];
    if (p.low < 0 || p.high < 0) throw std::invalid_argument("negative padding");
    m.dst += static_cast<uint64_t>(p.low * out_st[d]);
    m.dst_strides[d] = out_st[d] * (p.interior + 1);
  }
  return m;
}

// A scalar `v` filling a value of type `type` as a vreg immediate: an f32 constant, or zero
// of any 32-bit type.
std::optional<float> FillImmediate(const HloInstruction* v, hlo::PrimitiveType type) {
  if (v->opcode() != Opcode::kConstant || v->shape().ElementCount() != 1) return std::nullopt;
  const hlo::Literal& l = v->literal();
  if (type == hlo::PrimitiveType::kF32 && !l.floats.empty() &&
      std::isfinite(l.floats[0]))  // the assembler's immediates are finite
    return static_cast<float>(l.floats[0]);
  if (!l.ints.empty() && l.ints[0] == 0) return 0.0f;
  if (!l.floats.empty() && l.floats[0] == 0 && !std::signbit(l.floats[0])) return 0.0f;
  return std::nullopt;
}

}  // namespace

std::string MoveOpKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  const Opcode code = instr.opcode();
  if (code != Opcode::kCopy && code != Opcode::kTranspose && code != Opcode::kBroadcast &&
      code != Opcode::kReverse && code != Opcode::kSlice && code != Opcode::kConcatenate &&
      code != Opcode::kPad)
    return "";
  if (!instr.shape().IsArray() || instr.shape().ElementCount() == 0) return "";
  for (const HloInstruction* o : instr.operands())
    if (!o->shape().IsArray()) return "";
  const int64_t elem = ElemBytesOf(instr.shape());
  if (elem != 4 && elem != 2) return "";
  // Constants have no HBM buffer (kernels take them as immediates): a scalar one broadcast
  // is a fill; the pad value is handled below; other moves of constants stay timing-only.
  for (size_t i = 0; i < instr.operand_count(); ++i)
    if (instr.operand(i)->opcode() == Opcode::kConstant && !(code == Opcode::kPad && i == 1) &&
        !(code == Opcode::kBroadcast && elem == 4 &&
          FillImmediate(instr.operand(i), instr.shape().type)))
      return "";
  std::vector<StridedMove> moves;
  std::optional<MoveFill> fill;
  try {
    if (code == Opcode::kBroadcast && instr.operand(0)->opcode() == Opcode::kConstant) {
      fill = MoveFill{FillImmediate(instr.operand(0), instr.shape().type), 0, c.address(&instr),
                      instr.shape().ElementCount() * elem, std::nullopt};
    } else if (code == Opcode::kConcatenate) {
      moves = Concatenate(instr, c, elem);
    } else if (code == Opcode::kPad) {
      // The fill copies whole 4-byte values: a 2-byte type only with +0, all zero bits.
      if (elem != 4 && !FillImmediate(instr.operand(1), instr.shape().type)) return "";
      fill =
          MoveFill{FillImmediate(instr.operand(1), instr.shape().type), c.address(instr.operand(1)),
                   c.address(&instr), instr.shape().ElementCount() * elem, std::nullopt};
      // Constants have no HBM buffer (kernels take them as immediates); a vreg writes f32
      // values and an integer zero.
      if (instr.operand(1)->opcode() == Opcode::kConstant && !fill->immediate) return "";
      moves = {PadInterior(instr, c, elem)};
    } else {
      moves = {Whole(instr, c, elem)};
    }
  } catch (const std::invalid_argument&) {
    return "";  // the byte-count copy models its timing
  }
  std::string k;
  try {
    k = MoveKernel(moves, fill ? &*fill : nullptr, instr.name());
  } catch (const std::invalid_argument&) {
    return "";
  }
  op.kind = KernelKind::kDma;
  op.hbm_bytes = 2 * static_cast<uint64_t>(instr.shape().ElementCount() * elem);
  op.exact = true;
  op.vmem_bytes = MoveKernelVmemBytes();
  return k;
}

bool Bf16MoveOnExactKernel(const HloInstruction& move) {
  const Opcode code = move.opcode();
  if (code == Opcode::kBitcast) return true;  // no code: the same bytes
  if (code != Opcode::kPad && code != Opcode::kConcatenate) return false;
  auto even_rows = [](const hlo::Shape& s) {
    return s.IsArray() && s.type == hlo::PrimitiveType::kBF16 && !s.dims.empty() &&
           s.dims.back() % 2 == 0;
  };
  if (!even_rows(move.shape())) return false;
  if (code == Opcode::kConcatenate) {
    for (const HloInstruction* o : move.operands())
      if (!even_rows(o->shape())) return false;
    return true;
  }
  const hlo::PaddingConfig* p = move.padding();
  if (!p || p->empty() || !even_rows(move.operand(0)->shape())) return false;
  const hlo::PadDim& last = p->back();
  return last.low == 0 && last.high == 0 && last.interior == 0 &&
         FillImmediate(move.operand(1), hlo::PrimitiveType::kBF16).has_value();
}

// replica-id or partition-id: each core's program fills the u32[] result with its index
// (OpContext::per_device: a module of one device per core, core k being global device k =
// replica x partitions + partition) or 0 (a single-device module every core runs whole,
// whose one replica and partition are 0).
std::vector<std::string> EmitDeviceIndex(const HloInstruction& instr, const OpContext& c,
                                         LoweredOp& op) {
  std::vector<std::string> programs;
  const int64_t partitions = std::max<int64_t>(1, c.partitions);
  const bool per_device = c.per_device;
  for (int core = 0; core < c.cores; ++core) {
    // Core k is global device k: replica k / partitions, partition k % partitions.
    const int64_t index =
        instr.opcode() == Opcode::kReplicaId ? core / partitions : core % partitions;
    MoveFill fill{std::nullopt, 0, c.address(&instr), 4,
                  static_cast<uint32_t>(per_device ? index : 0)};
    programs.push_back(MoveKernel({}, &fill, instr.name()));
  }
  op.kind = KernelKind::kDma;
  op.hbm_bytes = 4;
  op.exact = true;
  op.vmem_bytes = MoveKernelVmemBytes();
  return programs;
}

}  // namespace tpusim::lowering
