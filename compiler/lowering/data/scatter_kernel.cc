#include "compiler/lowering/data/scatter_kernel.h"

#include <algorithm>
#include <sstream>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

constexpr int64_t kMaxGroup = 128;             // update rows per group: SMEM index batch
constexpr int64_t kVmemBudget = 8 << 20;       // table rows and update rows of a group
constexpr int64_t kVregBytes = 4096;           // f32[8,128]
constexpr int64_t kCopyChunk = 1 << 20;        // the operand -> result copy, per DMA
constexpr int64_t kHashWords = 4 * kMaxGroup;  // open addressing, at most 1/4 full
static_assert((kHashWords & (kHashWords - 1)) == 0);
// SMEM words per group row k: its index (-1 when skipped), whether it writes back, the VMEM
// row its sum starts from, its hash slot; then the hash table (row + 1 per slot, 0: empty).
constexpr int64_t kIdx = 0, kWriteBack = 4 * kMaxGroup, kSource = 8 * kMaxGroup,
                  kSlot = 12 * kMaxGroup, kHash = 16 * kMaxGroup;
static_assert(kHash + 4 * kHashWords <= assembly::kKernelSmemBytes);

bool Is(const HloInstruction& i, const char* attr, const std::vector<int64_t>& want) {
  const hlo::IntList* l = i.GetIntList(attr);
  return (l ? std::vector<int64_t>(l->begin(), l->end()) : std::vector<int64_t>{}) == want;
}

bool AddsItsParameters(const hlo::HloComputation* f) {
  if (!f || f->root()->opcode() != Opcode::kAdd) return false;
  const HloInstruction *a = f->root()->operand(0), *b = f->root()->operand(1);
  return a->opcode() == Opcode::kParameter && b->opcode() == Opcode::kParameter &&
         a->parameter_number() != b->parameter_number();
}

struct Plan {
  int64_t table_rows = 0, row_stride = 0;  // the table: rows, bytes per row
  int64_t rows = 0, row_bytes = 0;         // update rows and the bytes of each
  int64_t slot = 0, group = 0;             // VMEM bytes per row, rows per group
};

// One group of `g` update rows; r10, r11 point at its indices and update rows.
void EmitGroup(std::ostream& s, const Plan& p, int64_t g, const std::string& l) {
  const int64_t updates = p.group * p.slot, per_slot = p.slot / 4;
  s << "    li r1, " << kIdx << "\n    dma.hs r1, r10, " << l << "idx, f1\n    li r1, " << updates
    << "\n    dma.hv r1, r11, " << l << "upd, f2\n    li r20, 1\n    wait seq, f1, 1\n"
    << "    li r3, 0\n    li r4, " << g * 4 << "\n";
  // Pass 1: per row, skip it, chain it onto an earlier row of the same index, or fetch it.
  s << l << "p1:\n    sld r5, r3, " << kIdx << "\n    blt r5, r14, " << l
    << "skip\n    bge r5, r13, " << l << "skip\n    li r7, 1\n    sst r7, r3, " << kWriteBack
    << "\n    and r6, r5, r19\n"
    << l << "probe:\n    shli r7, r6, 2\n    sld r8, r7, " << kHash << "\n    beq r8, r14, " << l
    << "fresh\n    addi r8, r8, -1\n    shli r8, r8, 2\n    sld r9, r8, " << kIdx
    << "\n    beq r9, r5, " << l << "chain\n    addi r6, r6, 1\n    and r6, r6, r19\n    jmp " << l
    << "probe\n"
    << l << "chain:\n    sst r14, r8, " << kWriteBack << "\n    muli r9, r8, " << per_slot
    << "\n    sst r9, r3, " << kSource << "\n    jmp " << l << "insert\n"
    << l << "fresh:\n    muli r9, r3, " << per_slot << "\n    sst r9, r3, " << kSource
    << "\n    mul r8, r5, r15\n    add r8, r8, r12\n    dma.hv r9, r8, row, f2\n"
    << "    addi r20, r20, 1\n"
    << l << "insert:\n    shri r8, r3, 2\n    addi r8, r8, 1\n    sst r8, r7, " << kHash
    << "\n    sst r7, r3, " << kSlot << "\n    jmp " << l << "next1\n"
    << l << "skip:\n    li r7, -1\n    sst r7, r3, " << kIdx << "\n"
    << l << "next1:\n    addi r3, r3, 4\n    blt r3, r4, " << l << "p1\n";
  s << "    li r22, 0\n"
    << l << "reads:\n    wait seq, f2, 1\n    addi r22, r22, 1\n    blt r22, r20, " << l
    << "reads\n";
  // Pass 2: the VPU adds each update row onto its source row, in update order.
  s << "    li r3, 0\n"
    << l << "p2:\n    sld r5, r3, " << kIdx << "\n    blt r5, r14, " << l
    << "next2\n    sld r8, r3, " << kSource << "\n    muli r7, r3, " << per_slot
    << "\n    addi r9, r7, " << updates << "\n    vloop r16, 4\n    vlds v0, r8, " << kVregBytes
    << "\n    vlds v1, r9, " << kVregBytes << "\n    vadd v2, v0, v1\n    vsts v2, r7, "
    << kVregBytes << "\n"
    << l << "next2:\n    addi r3, r3, 4\n    blt r3, r4, " << l << "p2\n"
    << "    signal vpu, f3, 1\n    wait dma, f3, 1\n";
  // Pass 3: the last row of each index back to the table; the hash slots cleared.
  s << "    li r3, 0\n    li r21, 0\n"
    << l << "p3:\n    sld r5, r3, " << kIdx << "\n    blt r5, r14, " << l
    << "next3\n    sld r7, r3, " << kSlot << "\n    sst r14, r7, " << kHash << "\n    sld r7, r3, "
    << kWriteBack << "\n    beq r7, r14, " << l << "next3\n    muli r8, r3, " << per_slot
    << "\n    mul r9, r5, r15\n    add r9, r9, r12\n    dma.vh r9, r8, row, f4\n"
    << "    addi r21, r21, 1\n"
    << l << "next3:\n    addi r3, r3, 4\n    blt r3, r4, " << l << "p3\n"
    << "    li r22, 0\n    bge r22, r21, " << l << "written\n"
    << l << "writes:\n    wait seq, f4, 1\n    addi r22, r22, 1\n    blt r22, r21, " << l
    << "writes\n"
    << l << "written:\n    addi r10, r10, " << g * 4 << "\n    addi r11, r11, " << g * p.row_bytes
    << "\n";
}

// The operand into the result buffer, in chunks over the DMA engines (f0).
void EmitCopy(std::ostream& s, uint64_t src, uint64_t dst, int64_t bytes) {
  const int64_t chunks = bytes / kCopyChunk, tail = bytes % kCopyChunk;
  s << assembly::LoadAddress(1, src, 3) << assembly::LoadAddress(2, dst, 3);
  if (chunks > 0)
    s << ".desc chunk rows=1 row_bytes=" << kCopyChunk << " src_stride=0 dst_stride=0\n"
      << "    li r3, 0\n    li r4, " << chunks << "\ncopy:\n    dma.hh r2, r1, chunk, f0\n"
      << "    addi r1, r1, " << kCopyChunk << "\n    addi r2, r2, " << kCopyChunk
      << "\n    addi r3, r3, 1\n    blt r3, r4, copy\n";
  if (tail > 0)
    s << ".desc tail rows=1 row_bytes=" << tail << " src_stride=0 dst_stride=0\n"
      << "    dma.hh r2, r1, tail, f0\n";
  s << "    wait seq, f0, " << chunks + (tail > 0) << "\n";
}

}  // namespace

std::string ScatterKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (instr.opcode() != Opcode::kScatter || instr.operand_count() != 3) return "";
  const hlo::Shape &table = instr.operand(0)->shape(), &idx = instr.operand(1)->shape(),
                   &upd = instr.operand(2)->shape();
  const auto f32 = [](const hlo::Shape& s) {
    return s.IsArray() && s.type == hlo::PrimitiveType::kF32;
  };
  if (!f32(table) || !f32(upd) || !f32(instr.shape()) || table.rank() != 2 || !idx.IsArray() ||
      idx.type != hlo::PrimitiveType::kS32 || !AddsItsParameters(instr.to_apply()))
    return "";
  // Indices: one per update row (a trailing index vector of length 1 is the same thing).
  const int64_t r = idx.rank(), ivd = instr.GetInt("index_vector_dim").value_or(r);
  if (!(ivd == r || (ivd == r - 1 && idx.dims[static_cast<size_t>(ivd)] == 1))) return "";
  std::vector<int64_t> batch(idx.dims.begin(), idx.dims.begin() + ivd);
  if (upd.rank() != static_cast<int64_t>(batch.size()) + 1 ||
      !std::equal(batch.begin(), batch.end(), upd.dims.begin()) ||
      !Is(instr, "update_window_dims", {upd.rank() - 1}) ||
      !Is(instr, "inserted_window_dims", {0}) || !Is(instr, "scatter_dims_to_operand_dims", {0}) ||
      !Is(instr, "input_batching_dims", {}) || !Is(instr, "scatter_indices_batching_dims", {}))
    return "";
  Plan p;
  p.table_rows = table.dims[0], p.row_stride = table.dims[1] * 4;
  p.rows = idx.ElementCount(), p.row_bytes = upd.dims.back() * 4;
  if (p.rows == 0 || p.row_bytes == 0 || p.row_bytes > p.row_stride || p.table_rows == 0) return "";
  p.slot = (p.row_bytes + kVregBytes - 1) / kVregBytes * kVregBytes;
  p.group = std::min({kMaxGroup, kVmemBudget / (2 * p.slot), p.rows});
  if (p.group < 1) return "";
  const int64_t full = p.rows / p.group, tail = p.rows % p.group;

  std::ostringstream s;
  s << "# scatter-add of " << p.rows << " rows of " << p.row_bytes << " bytes into " << p.table_rows
    << " (compiler/lowering/data/scatter_kernel.cc)\n.tag \"" << instr.name() << "\"\n"
    << ".desc row rows=1 row_bytes=" << p.row_bytes << " src_stride=0 dst_stride=0\n";
  for (const auto& [name, g] : {std::pair<std::string, int64_t>{"full_", p.group}, {"tail_", tail}})
    if (g > 0)
      s << ".desc " << name << "idx rows=1 row_bytes=" << g * 4 << " src_stride=0 dst_stride=0\n"
        << ".desc " << name << "upd rows=" << g << " row_bytes=" << p.row_bytes
        << " src_stride=" << p.row_bytes << " dst_stride=" << p.slot << "\n";
  for (int f = 0; f <= 4; ++f) s << "    sflag f" << f << ", 0\n";
  const uint64_t out = c.address(&instr), in = c.address(instr.operand(0));
  if (in != out) EmitCopy(s, in, out, p.table_rows * p.row_stride);
  s << assembly::LoadAddress(10, c.address(instr.operand(1)), 3)
    << assembly::LoadAddress(11, c.address(instr.operand(2)), 3)
    << assembly::LoadAddress(12, out, 3) << "    li r13, " << p.table_rows
    << "\n    li r14, 0\n    li r15, " << p.row_stride << "\n    li r16, " << p.slot / kVregBytes
    << "\n    li r19, " << kHashWords - 1 << "\n    li r3, 0\n    li r4, " << kHashWords * 4
    << "\nclear:\n    sst r14, r3, " << kHash << "\n    addi r3, r3, 4\n    blt r3, r4, clear\n";
  if (full > 0) {
    s << "    li r17, 0\n    li r18, " << full << "\ngroups:\n";
    EmitGroup(s, p, p.group, "full_");
    s << "    addi r17, r17, 1\n    blt r17, r18, groups\n";
  }
  if (tail > 0) EmitGroup(s, p, tail, "tail_");
  op.kind = KernelKind::kDma;
  op.hbm_bytes = static_cast<uint64_t>((in != out ? 2 * p.table_rows * p.row_stride : 0) +
                                       p.rows * (4 + 3 * p.row_bytes));
  op.exact = true;
  return s.str();
}

}  // namespace tpusim::lowering
