#include "compiler/lowering/value_copies.h"

#include <algorithm>
#include <bit>

#include "compiler/lowering/move_kernel.h"
#include "isa/bf16.h"

namespace tpusim::lowering {
namespace {

using hlo::PrimitiveType;

// A move's row is at most a descriptor field (32 bits); larger copies are cut into these.
constexpr uint64_t kCopyPieceBytes = uint64_t{1} << 30;

uint64_t Words(uint64_t bytes) { return (bytes + 3) / 4 * 4; }

}  // namespace

std::optional<uint32_t> ConstantWord(const hlo::HloInstruction& c) {
  const hlo::Literal& l = c.literal();
  const hlo::Shape& s = c.shape();
  if (c.opcode() != hlo::Opcode::kConstant || !s.IsArray() || l.elided) return std::nullopt;
  const bool ints = l.floats.empty();
  if (ints ? l.ints.empty() : !l.ints.empty()) return std::nullopt;
  if (ints ? std::adjacent_find(l.ints.begin(), l.ints.end(), std::not_equal_to<>()) != l.ints.end()
           : std::adjacent_find(l.floats.begin(), l.floats.end(), std::not_equal_to<>()) !=
                 l.floats.end())
    return std::nullopt;
  const double value = ints ? static_cast<double>(l.ints[0]) : l.floats[0];
  switch (s.type) {
    case PrimitiveType::kS32:
    case PrimitiveType::kU32:
      if (!ints) return std::nullopt;
      return static_cast<uint32_t>(l.ints[0]);
    case PrimitiveType::kS64:
    case PrimitiveType::kU64:
    case PrimitiveType::kC64:
      return std::nullopt;
    case PrimitiveType::kBF16: {
      const uint32_t half = isa::F32ToBf16(static_cast<float>(value));
      return half | half << 16;
    }
    default:  // f32, pred and the other types stored as f32 words (cli/step_check.h)
      return std::bit_cast<uint32_t>(static_cast<float>(value));
  }
}

std::vector<std::string> CopyKernels(const std::vector<ValueCopy>& copies, const std::string& tag) {
  std::vector<std::string> kernels;
  std::vector<MoveFill> fills;
  std::vector<StridedMove> moves;
  for (const ValueCopy& c : copies) {
    const uint64_t bytes = Words(c.bytes);
    if (c.fill) {
      fills.push_back(MoveFill{std::nullopt, 0, c.dst, static_cast<int64_t>(bytes), c.fill});
      continue;
    }
    for (uint64_t done = 0; done < bytes; done += kCopyPieceBytes) {
      StridedMove m;
      m.dims = {static_cast<int64_t>(std::min(kCopyPieceBytes, bytes - done) / 4)};
      m.src_strides = m.dst_strides = {4};
      m.src = c.src + done, m.dst = c.dst + done;
      moves.push_back(std::move(m));
    }
  }
  // The last fill runs in the moves' kernel, before them (they write other buffers).
  for (size_t k = 0; k + 1 < fills.size(); ++k) kernels.push_back(MoveKernel({}, &fills[k], tag));
  if (!moves.empty() || !fills.empty())
    kernels.push_back(MoveKernel(moves, fills.empty() ? nullptr : &fills.back(), tag));
  return kernels;
}

}  // namespace tpusim::lowering
