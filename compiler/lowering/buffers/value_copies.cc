#include "compiler/lowering/buffers/value_copies.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <sstream>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/data/move_kernel.h"
#include "isa/bf16.h"

namespace tpusim::lowering {
namespace {

using hlo::PrimitiveType;

// A move's row is at most a descriptor field (32 bits); larger copies are cut into these.
constexpr uint64_t kCopyPieceBytes = uint64_t{1} << 30;

uint64_t Words(uint64_t bytes) { return (bytes + 3) / 4 * 4; }

// The words of a constant into `dst`: each word's bit pattern as a vreg (`vmovi`) stored at
// its own 4 KiB row of VMEM, then one DMA takes the first word of every row.
std::string LiteralKernel(const std::vector<uint32_t>& words, uint64_t dst,
                          const std::string& tag) {
  std::ostringstream s;
  s << "# constant of " << words.size() << " words\n.tag \"" << tag << "\"\n"
    << ".desc words rows=" << words.size() << " row_bytes=4 src_stride=4096 dst_stride=4\n";
  for (size_t i = 0; i < words.size(); ++i) {
    char v[16];
    std::snprintf(v, sizeof v, "0x%08x", static_cast<unsigned>(words[i]));
    s << "    vmovi v0, f32:" << v << "\n    li r1, " << i * 4096 << "\n    vst v0, r1\n";
  }
  s << "    signal vpu, f0, 1\n    wait dma, f0, 1\n"
    << assembly::LoadAddress(2, dst, 9) << "    li r1, 0\n    dma.vh r2, r1, words, f1\n"
    << "    wait seq, f1, 1\n    halt\n";
  return s.str();
}

}  // namespace

std::vector<uint32_t> ConstantWords(const hlo::HloInstruction& c) {
  const hlo::Literal& l = c.literal();
  const hlo::Shape& s = c.shape();
  if (c.opcode() != hlo::Opcode::kConstant || !s.IsArray() || l.elided) return {};
  const bool ints = l.floats.empty();
  const size_t n = ints ? l.ints.size() : l.floats.size();
  if (n == 0 || static_cast<int64_t>(n) != s.ElementCount()) return {};
  auto value = [&](size_t i) { return ints ? static_cast<double>(l.ints[i]) : l.floats[i]; };
  std::vector<uint32_t> words;
  switch (s.type) {
    case PrimitiveType::kS32:
    case PrimitiveType::kU32:
      if (!ints) return {};
      for (int64_t v : l.ints) words.push_back(static_cast<uint32_t>(v));
      break;
    case PrimitiveType::kF32:
      for (size_t i = 0; i < n; ++i) words.push_back(std::bit_cast<uint32_t>(float(value(i))));
      break;
    case PrimitiveType::kBF16:  // little-endian: element 2k in the low half of word k
      if (n % 2) return {};
      for (size_t i = 0; i < n; i += 2)
        words.push_back(uint32_t{isa::F32ToBf16(static_cast<float>(value(i)))} |
                        uint32_t{isa::F32ToBf16(static_cast<float>(value(i + 1)))} << 16);
      break;
    default:
      return {};
  }
  if (words.size() > kMaxConstantWords) return {};
  return words;
}

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
    default:  // f32, pred and the other types stored as f32 words (driver/step_check.h)
      return std::bit_cast<uint32_t>(static_cast<float>(value));
  }
}

std::vector<std::string> CopyKernels(const std::vector<ValueCopy>& copies, const std::string& tag) {
  std::vector<std::string> kernels;
  std::vector<MoveFill> fills;
  std::vector<StridedMove> moves;
  for (const ValueCopy& c : copies) {
    const uint64_t bytes = Words(c.bytes);
    if (!c.words.empty()) {
      kernels.push_back(LiteralKernel(c.words, c.dst, tag));
      continue;
    }
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
