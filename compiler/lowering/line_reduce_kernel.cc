#include "compiler/lowering/line_reduce_kernel.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <sstream>
#include <vector>

#include "compiler/lowering/asm_util.h"
#include "compiler/lowering/data_parallel.h"
#include "compiler/lowering/tuple_results.h"
#include "compiler/lowering/vpu_body.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using hlo::PrimitiveType;

constexpr int64_t kSlots = 1024;        // lines per group: elements of a vreg
constexpr int64_t kChunkColumns = 512;  // columns per transposing DMA: 2 MiB per operand
constexpr int64_t kVregBytes = 4096;
constexpr int64_t kMaxBlocks = 4096;    // groups x chunks: the kernel is unrolled over them
constexpr uint64_t kOutVmem = 8 << 20;  // VMEM: the results' vregs, after the operands'

bool Word32(const hlo::Shape& s) {
  return s.IsArray() && (s.type == PrimitiveType::kF32 || s.type == PrimitiveType::kS32 ||
                         s.type == PrimitiveType::kU32);
}

// The 32-bit pattern of a scalar constant of a 32-bit type.
std::optional<uint32_t> ConstantBits(const HloInstruction* v) {
  if (v->opcode() != Opcode::kConstant || !v->shape().IsScalar() || !Word32(v->shape()))
    return std::nullopt;
  const hlo::Literal& l = v->literal();
  if (v->shape().type == PrimitiveType::kF32 && !l.floats.empty())
    return std::bit_cast<uint32_t>(static_cast<float>(l.floats[0]));
  if (!l.ints.empty()) return static_cast<uint32_t>(l.ints[0]);
  if (!l.floats.empty()) return static_cast<uint32_t>(static_cast<int64_t>(l.floats[0]));
  return std::nullopt;
}

struct Plan {
  int64_t arrays = 1, lines = 0, columns = 0;
  std::vector<std::optional<uint64_t>> inputs;  // HBM; nullopt: an iota along the columns
  std::vector<uint32_t> inits;
  std::vector<std::optional<uint64_t>> outputs;
  ReducerBody body;
  uint32_t one = 1;  // the iotas' step, as their element bits
};

// acc k in v k, value k in v (arrays + k), the iotas' step in v (2 arrays).
std::string Block(const Plan& p, int64_t line0, int64_t col0, int64_t cols,
                  const std::string& desc) {
  std::ostringstream s;
  int loaded = 0;
  for (int64_t k = 0; k < p.arrays; ++k) {
    if (!p.inputs[k]) continue;
    const uint64_t hbm = *p.inputs[k] + static_cast<uint64_t>((line0 * p.columns + col0) * 4);
    s << LoadAddress(2, hbm, 3) << "    li r1, " << k * kChunkColumns * kVregBytes
      << "\n    dma.hv r1, r2, " << desc << ", f0\n";
    ++loaded;
  }
  if (loaded) s << "    wait vpu, f0, " << loaded << "\n";
  for (int64_t k = 0; k < p.arrays; ++k)
    if (p.inputs[k]) s << "    li r" << 4 + k << ", " << k * kChunkColumns * kVregBytes << "\n";
  std::vector<std::string> trip;
  for (int64_t k = 0; k < p.arrays; ++k)
    if (p.inputs[k])
      trip.push_back("vlds v" + std::to_string(p.arrays + k) + ", r" + std::to_string(4 + k) +
                     ", 4096");
  trip.insert(trip.end(), p.body.body.begin(), p.body.body.end());
  for (int64_t k = 0; k < p.arrays; ++k)
    if (p.body.results[k] != k)
      trip.push_back("vor.u32 v" + std::to_string(k) + ", v" + std::to_string(p.body.results[k]) +
                     ", v" + std::to_string(p.body.results[k]));
  const int step = static_cast<int>(2 * p.arrays);
  for (int64_t k = 0; k < p.arrays; ++k)
    if (!p.inputs[k])
      trip.push_back("vadd.s32 v" + std::to_string(p.arrays + k) + ", v" +
                     std::to_string(p.arrays + k) + ", v" + std::to_string(step));
  s << "    li r6, " << cols << "\n    vloop r6, " << trip.size() << "\n";
  for (const std::string& t : trip) s << "    " << t << "\n";
  // The next block's DMA may overwrite the operands once the VPU has read them.
  s << "    signal vpu, f1, 1\n    wait dma, f1, 1\n";
  return s.str();
}

std::string Emit(const Plan& p, const std::string& tag) {
  std::ostringstream head, s;
  head << "# reduce of " << p.lines << " lines of " << p.columns
       << " (lines in lanes, compiler/lowering/line_reduce_kernel.cc)\n.tag \"" << tag << "\"\n";
  auto desc = [&](int64_t lines, int64_t cols) {
    const std::string name = "in_" + std::to_string(lines) + "_" + std::to_string(cols);
    head << ".desc " << name << " rows=" << cols
         << " row_bytes=4 src_stride=4 dst_stride=" << kVregBytes << " planes=" << lines
         << " src_plane_stride=" << p.columns * 4 << " dst_plane_stride=4\n";
    return name;
  };
  std::vector<std::string> descs_made;
  s << "    sflag f0, 0\n    sflag f1, 0\n    sflag f2, 0\n";
  for (const std::string& line : p.body.prologue) s << "    " << line << "\n";
  s << "    vmovi v" << 2 * p.arrays << ", f32:0x" << std::hex << p.one << std::dec << "\n";
  for (int64_t line0 = 0; line0 < p.lines; line0 += kSlots) {
    const int64_t lines = std::min(kSlots, p.lines - line0);
    for (int64_t k = 0; k < p.arrays; ++k) {
      s << "    vmovi v" << k << ", f32:0x" << std::hex << p.inits[k] << std::dec << "\n";
      if (!p.inputs[k]) s << "    vmovi v" << p.arrays + k << ", f32:0x0\n";
    }
    for (int64_t col0 = 0; col0 < p.columns; col0 += kChunkColumns) {
      const int64_t cols = std::min(kChunkColumns, p.columns - col0);
      const std::string name = "in_" + std::to_string(lines) + "_" + std::to_string(cols);
      if (std::find(descs_made.begin(), descs_made.end(), name) == descs_made.end())
        descs_made.push_back(desc(lines, cols));
      s << Block(p, line0, col0, cols, name);
    }
    // Each result's slots are its lines' values, in order: one vreg out per result.
    int stored = 0;
    for (int64_t k = 0; k < p.arrays; ++k) {
      if (!p.outputs[k]) continue;
      const uint64_t vmem = kOutVmem + static_cast<uint64_t>(k * kVregBytes);
      s << "    li r1, " << vmem << "\n    vst v" << k << ", r1\n";
      ++stored;
    }
    if (!stored) continue;
    s << "    signal vpu, f2, 1\n    wait dma, f2, 1\n";
    const std::string out = "out_" + std::to_string(lines);
    if (std::find(descs_made.begin(), descs_made.end(), out) == descs_made.end()) {
      head << ".desc " << out << " rows=1 row_bytes=" << lines * 4
           << " src_stride=0 dst_stride=0\n";
      descs_made.push_back(out);
    }
    for (int64_t k = 0; k < p.arrays; ++k) {
      if (!p.outputs[k]) continue;
      s << "    li r1, " << kOutVmem + static_cast<uint64_t>(k * kVregBytes) << "\n"
        << LoadAddress(2, *p.outputs[k] + static_cast<uint64_t>(line0 * 4), 3)
        << "    dma.vh r2, r1, " << out << ", f3\n";
    }
    s << "    wait seq, f3, " << stored << "\n";  // the result vregs are free again
  }
  return head.str() + s.str();
}

}  // namespace

std::string LineReduceKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (instr.opcode() != Opcode::kReduce || instr.operand_count() % 2 || !instr.to_apply() ||
      !instr.dimensions())
    return "";
  Plan p;
  p.arrays = static_cast<int64_t>(instr.operand_count() / 2);
  const hlo::Shape& x = instr.operand(0)->shape();
  const int64_t rank = x.rank();
  if (p.arrays > 2 || rank == 0 || *instr.dimensions() != std::vector<int64_t>{rank - 1}) return "";
  p.columns = x.dims.back();
  p.lines = x.ElementCount() / std::max<int64_t>(p.columns, 1);
  if (c.split > 0 && HasDim(x, c.split)) {
    if (rank < 2 || x.dims[0] != c.split || !IsShare(c, instr.operand(0))) return "";
    p.lines /= c.cores;
  }
  if (p.columns == 0 || p.lines == 0 ||
      (p.lines + kSlots - 1) / kSlots * ((p.columns + kChunkColumns - 1) / kChunkColumns) >
          kMaxBlocks)
    return "";
  std::optional<PrimitiveType> iota_type;
  for (int64_t k = 0; k < p.arrays; ++k) {
    const HloInstruction* in = instr.operand(static_cast<size_t>(k));
    const std::optional<uint32_t> init =
        ConstantBits(instr.operand(static_cast<size_t>(p.arrays + k)));
    if (!Word32(in->shape()) || in->shape().dims != x.dims || !init) return "";
    p.inits.push_back(*init);
    if (in->opcode() == Opcode::kIota && in->GetInt("iota_dimension") == rank - 1) {
      if (iota_type && *iota_type != in->shape().type) return "";
      iota_type = in->shape().type;
      p.inputs.push_back(std::nullopt);
    } else if (in->opcode() == Opcode::kConstant ||
               (c.split > 0 && HasDim(in->shape(), c.split) && !IsShare(c, in))) {
      return "";  // constants have no HBM buffer
    } else {
      p.inputs.push_back(c.address(in));
    }
  }
  if (iota_type == PrimitiveType::kF32) return "";  // the index counts as an integer
  std::vector<int> params;
  for (int64_t k = 0; k < 2 * p.arrays; ++k) params.push_back(static_cast<int>(k));
  p.body = BuildReducerBody(*instr.to_apply(), params);
  if (!p.body.exact || static_cast<int64_t>(p.body.results.size()) != p.arrays) return "";
  for (int64_t k = 0; k < p.arrays; ++k)  // a result in another parameter's register
    if (p.body.results[k] < 2 * p.arrays && p.body.results[k] != k) return "";
  if (p.arrays == 1) {
    p.outputs = {c.address(&instr)};
  } else if (!TupleResultAddresses(instr, c, p.outputs)) {
    return "";
  }
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = static_cast<uint64_t>(p.lines * (p.columns + 1) * 4 * p.arrays);
  op.exact = true;
  return Emit(p, instr.name());
}

}  // namespace tpusim::lowering
