#include "compiler/lowering/reduce/line_reduce_kernel.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <sstream>
#include <vector>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/buffers/tuple_results.h"
#include "compiler/lowering/vpu/vpu_body.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using hlo::PrimitiveType;

constexpr int64_t kSlots = 1024;        // lines per group: elements of a vreg
constexpr int64_t kChunkColumns = 512;  // columns per transposing DMA: 2 MiB per operand
constexpr int64_t kVregBytes = 4096;
constexpr int64_t kMaxBlocks = 4096;          // groups x chunks: the kernel is unrolled over them
constexpr int kMaxColumnLoads = 3;            // operands read per column: 6 MiB of VMEM
constexpr uint64_t kLineVmem = 6 << 20;       // VMEM: per-line operands, then the results
constexpr int kFirstTemp = 6, kMaxRegs = 12;  // registers the kernel binds, from v0

// The bits of a scalar constant as the VPU holds it (a pred as 1.0 or 0.0).
std::optional<uint32_t> ConstantBits(const HloInstruction* v) {
  if (v->opcode() != Opcode::kConstant || !v->shape().IsScalar()) return std::nullopt;
  const hlo::Literal& l = v->literal();
  const double x = !l.floats.empty() ? l.floats[0] : !l.ints.empty() ? l.ints[0] : 0;
  if (l.floats.empty() && l.ints.empty()) return std::nullopt;
  switch (v->shape().type) {
    case PrimitiveType::kF32:
      return std::bit_cast<uint32_t>(static_cast<float>(x));
    case PrimitiveType::kPred:
      return std::bit_cast<uint32_t>(x != 0 ? 1.0f : 0.0f);
    case PrimitiveType::kS32:
    case PrimitiveType::kU32:
      return static_cast<uint32_t>(static_cast<int64_t>(x));
    default:
      return std::nullopt;
  }
}

// Operands of the kernel: read per column (transposed), per line (one vreg per group), or
// an iota along the columns (a register counted up).
struct Plan {
  int64_t arrays = 1, lines = 0, columns = 0;
  std::vector<uint64_t> column_inputs, line_inputs;  // HBM
  bool counts = false;                               // an iota: v(step) holds its step
  std::vector<uint32_t> inits;
  std::vector<std::optional<uint64_t>> outputs;
  ReducerBody body;
  int column_reg = 0, line_reg = 0, counter_reg = 0, step_reg = 0;  // first of each
};

std::string Block(const Plan& p, int64_t line0, int64_t col0, int64_t cols,
                  const std::string& desc) {
  std::ostringstream s;
  const int64_t n = static_cast<int64_t>(p.column_inputs.size());
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t hbm = p.column_inputs[k] + static_cast<uint64_t>((line0 * p.columns + col0) * 4);
    s << assembly::LoadAddress(2, hbm, 3) << "    li r1, " << k * kChunkColumns * kVregBytes
      << "\n    dma.hv r1, r2, " << desc << ", f0\n";
  }
  if (n) s << "    wait vpu, f0, " << n << "\n";
  std::vector<std::string> trip;
  for (int64_t k = 0; k < n; ++k) {
    s << "    li r" << 4 + k << ", " << k * kChunkColumns * kVregBytes << "\n";
    trip.push_back("vlds v" + std::to_string(p.column_reg + k) + ", r" + std::to_string(4 + k) +
                   ", 4096");
  }
  trip.insert(trip.end(), p.body.body.begin(), p.body.body.end());
  for (int64_t k = 0; k < p.arrays; ++k)
    if (p.body.results[k] != k)
      trip.push_back("vor.u32 v" + std::to_string(k) + ", v" + std::to_string(p.body.results[k]) +
                     ", v" + std::to_string(p.body.results[k]));
  if (p.counts)
    trip.push_back("vadd.s32 v" + std::to_string(p.counter_reg) + ", v" +
                   std::to_string(p.counter_reg) + ", v" + std::to_string(p.step_reg));
  s << "    li r8, " << cols << "\n    vloop r8, " << trip.size() << "\n";
  for (const std::string& t : trip) s << "    " << t << "\n";
  // The next block's DMA may overwrite the operands once the VPU has read them.
  s << "    signal vpu, f1, 1\n    wait dma, f1, 1\n";
  return s.str();
}

// Descriptors are named by their shape, made once each.
class Descs {
 public:
  explicit Descs(std::ostringstream& head) : head_(head) {}
  std::string Get(const std::string& name, const std::string& fields) {
    if (std::find(made_.begin(), made_.end(), name) == made_.end()) {
      head_ << ".desc " << name << " " << fields << "\n";
      made_.push_back(name);
    }
    return name;
  }

 private:
  std::ostringstream& head_;
  std::vector<std::string> made_;
};

std::string Hex(uint32_t bits) {
  std::ostringstream s;
  s << "f32:0x" << std::hex << bits;
  return s.str();
}

std::string Emit(const Plan& p, const std::string& tag) {
  std::ostringstream head, s;
  head << "# reduce of " << p.lines << " lines of " << p.columns
       << " (lines in lanes, compiler/lowering/reduce/line_reduce_kernel.cc)\n.tag \"" << tag
       << "\"\n";
  Descs descs(head);
  s << "    sflag f0, 0\n    sflag f1, 0\n    sflag f2, 0\n    sflag f3, 0\n";
  for (const std::string& line : p.body.prologue) s << "    " << line << "\n";
  if (p.counts) s << "    vmovi v" << p.step_reg << ", " << Hex(1) << "\n";
  for (int64_t line0 = 0; line0 < p.lines; line0 += kSlots) {
    const int64_t lines = std::min(kSlots, p.lines - line0);
    const std::string row =
        descs.Get("row_" + std::to_string(lines),
                  "rows=1 row_bytes=" + std::to_string(lines * 4) + " src_stride=0 dst_stride=0");
    for (size_t k = 0; k < p.line_inputs.size(); ++k)  // one value per line, in its slot
      s << "    li r1, " << kLineVmem + k * kVregBytes << "\n"
        << assembly::LoadAddress(2, p.line_inputs[k] + static_cast<uint64_t>(line0 * 4), 3)
        << "    dma.hv r1, r2, " << row << ", f0\n";
    if (!p.line_inputs.empty()) s << "    wait vpu, f0, " << p.line_inputs.size() << "\n";
    for (size_t k = 0; k < p.line_inputs.size(); ++k)
      s << "    li r1, " << kLineVmem + k * kVregBytes << "\n    vld v" << p.line_reg + k
        << ", r1\n";
    for (int64_t k = 0; k < p.arrays; ++k)
      s << "    vmovi v" << k << ", " << Hex(p.inits[k]) << "\n";
    if (p.counts) s << "    vmovi v" << p.counter_reg << ", " << Hex(0) << "\n";
    for (int64_t col0 = 0; col0 < p.columns; col0 += kChunkColumns) {
      const int64_t cols = std::min(kChunkColumns, p.columns - col0);
      const std::string in = descs.Get(
          "in_" + std::to_string(lines) + "_" + std::to_string(cols),
          "rows=" + std::to_string(cols) + " row_bytes=4 src_stride=4 dst_stride=" +
              std::to_string(kVregBytes) + " planes=" + std::to_string(lines) +
              " src_plane_stride=" + std::to_string(p.columns * 4) + " dst_plane_stride=4");
      s << Block(p, line0, col0, cols, in);
    }
    // Each result's slots are its lines' values, in order: one vreg out per result.
    const uint64_t out_vmem = kLineVmem + p.line_inputs.size() * kVregBytes;
    int stored = 0;
    for (int64_t k = 0; k < p.arrays; ++k)
      if (p.outputs[k])
        s << "    li r1, " << out_vmem + static_cast<uint64_t>(k * kVregBytes) << "\n    vst v" << k
          << ", r1\n",
            ++stored;
    if (!stored) continue;
    s << "    signal vpu, f2, 1\n    wait dma, f2, 1\n";
    for (int64_t k = 0; k < p.arrays; ++k)
      if (p.outputs[k])
        s << "    li r1, " << out_vmem + static_cast<uint64_t>(k * kVregBytes) << "\n"
          << assembly::LoadAddress(2, *p.outputs[k] + static_cast<uint64_t>(line0 * 4), 3)
          << "    dma.vh r2, r1, " << row << ", f3\n";
    s << "    wait seq, f3, " << stored << "\n";  // the operand and result vregs are free again
  }
  return head.str() + s.str();
}

// Whether every broadcast in the fused computation `f` is of a scalar or of a per-line
// parameter (its dimensions the leading ones): laid out in lanes, both are already in place.
bool BroadcastsInPlace(const hlo::HloComputation& f, int64_t rank,
                       const std::vector<const HloInstruction*>& per_line) {
  for (const auto& i : f.instructions()) {
    if (i->opcode() != Opcode::kBroadcast) continue;
    const HloInstruction* o = i->operand(0);
    if (o->shape().IsScalar()) continue;
    const hlo::IntList* d = i->dimensions();
    hlo::IntList leading;
    for (int64_t k = 0; k + 1 < rank; ++k) leading.push_back(k);
    if (!d || *d != leading || std::find(per_line.begin(), per_line.end(), o) == per_line.end())
      return false;
  }
  return true;
}

}  // namespace

std::string LineReduceKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  // A reduce, or a fusion whose root is one (XLA's kInput fusion).
  const hlo::HloComputation* fused =
      instr.opcode() == Opcode::kFusion ? instr.fused_computation() : nullptr;
  const HloInstruction& r = fused ? *fused->root() : instr;
  if (r.opcode() != Opcode::kReduce || r.operand_count() % 2 || !r.to_apply() || !r.dimensions())
    return "";
  Plan p;
  p.arrays = static_cast<int64_t>(r.operand_count() / 2);
  const hlo::Shape& x = r.operand(0)->shape();
  const int64_t rank = x.rank();
  std::vector<int64_t> all(static_cast<size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) all[static_cast<size_t>(k)] = k;
  // Over the last dimension, or over all of them: one line of every element, row-major.
  const bool whole = rank > 1 && *r.dimensions() == all;
  if (p.arrays > 2 || rank == 0 || (*r.dimensions() != std::vector<int64_t>{rank - 1} && !whole))
    return "";
  p.columns = whole ? x.ElementCount() : x.dims.back();
  p.lines = x.ElementCount() / std::max<int64_t>(p.columns, 1);
  if (p.columns == 0 || p.lines == 0 ||
      (p.lines + kSlots - 1) / kSlots * ((p.columns + kChunkColumns - 1) / kChunkColumns) >
          kMaxBlocks)
    return "";
  // Where each leaf (the reduce's operands, or the fusion's parameters) comes from.
  std::vector<std::pair<const HloInstruction*, const HloInstruction*>> leaves;  // local, outside
  std::vector<const HloInstruction*> values, iotas, per_line;
  std::map<const HloInstruction*, const HloInstruction*> constants;
  for (int64_t k = 0; k < p.arrays; ++k) values.push_back(r.operand(static_cast<size_t>(k)));
  if (fused) {
    for (const HloInstruction* q : fused->parameters())
      leaves.emplace_back(q, instr.operand(static_cast<size_t>(q->parameter_number())));
    for (const auto& i : fused->instructions())
      if (i->opcode() == Opcode::kIota) iotas.push_back(i.get());
  } else {
    for (const HloInstruction* v : values) {
      if (v->opcode() == Opcode::kIota)
        iotas.push_back(v);
      else
        leaves.emplace_back(v, v);
    }
  }
  std::map<const HloInstruction*, int> regs;
  std::vector<const HloInstruction*> column_locals, line_locals;
  for (const auto& [local, outside] : leaves) {
    if (ConstantBits(outside) || outside->shape().IsScalar()) {
      if (!ConstantBits(outside)) return "";  // a scalar with an HBM buffer: not read per line
      constants[local] = outside;
    } else if (outside->opcode() == Opcode::kConstant || !IsWord32(outside->shape())) {
      return "";  // constants have no HBM buffer; pred arrays are bytes
    } else if (outside->shape().dims == x.dims ||
               ((fused || whole) && outside->shape().ElementCount() == x.ElementCount())) {
      // (a fused reshape keeps the row-major order: the same elements, line by line)
      column_locals.push_back(local), p.column_inputs.push_back(c.address(outside));
    } else if (fused && !whole &&
               outside->shape().dims == std::vector<int64_t>(x.dims.begin(), x.dims.end() - 1)) {
      line_locals.push_back(local), p.line_inputs.push_back(c.address(outside));
    } else {
      return "";
    }
  }
  for (const HloInstruction* i : iotas)
    if (whole || i->GetInt("iota_dimension") != rank - 1 || i->shape().dims != x.dims ||
        i->shape().type == PrimitiveType::kF32 ||
        (!iotas.empty() && i->shape() != iotas[0]->shape()))
      return "";
  if (fused && !BroadcastsInPlace(*fused, rank, line_locals)) return "";
  if (static_cast<int>(column_locals.size()) > kMaxColumnLoads) return "";
  // Registers: accumulators, column operands, line operands, the iota's count and step.
  int next = static_cast<int>(p.arrays);
  p.column_reg = next;
  for (const HloInstruction* l : column_locals) regs[l] = next++;
  p.line_reg = next;
  for (const HloInstruction* l : line_locals) regs[l] = next++;
  p.counts = !iotas.empty();
  p.counter_reg = next, p.step_reg = next + 1;
  if (p.counts) {
    for (const HloInstruction* i : iotas) regs[i] = p.counter_reg;
    next += 2;
  }
  if (next > kMaxRegs) return "";
  for (int64_t k = 0; k < p.arrays; ++k) {
    const HloInstruction* init = r.operand(static_cast<size_t>(p.arrays + k));
    const std::optional<uint32_t> bits =
        ConstantBits(fused && init->opcode() == Opcode::kParameter
                         ? instr.operand(static_cast<size_t>(init->parameter_number()))
                         : init);
    if (!bits) return "";
    p.inits.push_back(*bits);
  }
  std::vector<int> accs;
  for (int64_t k = 0; k < p.arrays; ++k) accs.push_back(static_cast<int>(k));
  p.body =
      BuildReducerBody(regs, constants, values, accs, *r.to_apply(), std::max(kFirstTemp, next));
  if (!p.body.exact || static_cast<int64_t>(p.body.results.size()) != p.arrays) return "";
  for (int64_t k = 0; k < p.arrays; ++k)  // a result in another bound register
    if (p.body.results[k] < next && p.body.results[k] != k) return "";
  // Results: 32-bit words; a pred result as the VPU holds it, which fits its buffer only up
  // to 128 elements (tile_ops.cc's StoredPred).
  const hlo::Shape& result = fused ? instr.shape() : r.shape();
  for (const hlo::Shape& s : result.IsTuple() ? result.tuple_shapes : std::vector{result})
    if (!IsWord32(s) && !(s.type == PrimitiveType::kPred && s.ElementCount() <= 128)) return "";
  if (p.arrays == 1) {
    p.outputs = {c.address(&instr)};
  } else if (!TupleResultAddresses(instr, c, p.outputs)) {
    return "";
  }
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = static_cast<uint64_t>(p.lines * 4) *
                 (p.column_inputs.size() * p.columns + p.line_inputs.size() + p.arrays);
  op.exact = true;
  return Emit(p, instr.name());
}

}  // namespace tpusim::lowering
