#include "compiler/lowering/data/gather_kernel.h"

#include <optional>
#include <sstream>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;

constexpr int64_t kBatchBytes = 4096;  // indices per SMEM batch: 4 KiB of the kernels' SMEM

bool Is(const HloInstruction& i, const char* attr, const std::vector<int64_t>& want) {
  const hlo::IntList* l = i.GetIntList(attr);
  return l ? std::vector<int64_t>(l->begin(), l->end()) == want : want.empty();
}

// Where each copied slice of a [rows, cols] table starts: its row from coordinate
// `row_coord` of the index vector (or, with -1, the index vector's position: a batching
// dimension), its column from `col_coord` (-1: column 0); `width` elements per slice.
struct GatherForm {
  int64_t coords = 1, row_coord = 0, col_coord = -1, width = 0;
};

// The three gathers of 2-D tables JAX writes: an embedding lookup (whole rows by one index,
// index vector implicit or of size 1), take_along_axis with an iota of row numbers
// concatenated to the column indices (elements by [row, col] vectors), and the same with a
// batching dimension (elements, the row being the index's own position).
std::optional<GatherForm> FormOf(const HloInstruction& g) {
  const hlo::Shape &table = g.operand(0)->shape(), &idx = g.operand(1)->shape();
  const int64_t r = idx.rank(), ivd = g.GetInt("index_vector_dim").value_or(r);
  if (ivd != r && ivd != r - 1) return std::nullopt;
  const int64_t coords = ivd == r ? 1 : idx.dims.back(), batch_rank = ivd == r ? r : r - 1;
  const bool batched = !Is(g, "operand_batching_dims", {});
  if (!batched && coords == 1 && Is(g, "offset_dims", {batch_rank}) &&
      Is(g, "collapsed_slice_dims", {0}) && Is(g, "start_index_map", {0}) &&
      Is(g, "slice_sizes", {1, table.dims[1]}))
    return GatherForm{1, 0, -1, table.dims[1]};
  if (!batched && coords == 2 && Is(g, "offset_dims", {}) &&
      Is(g, "collapsed_slice_dims", {0, 1}) && Is(g, "slice_sizes", {1, 1})) {
    if (Is(g, "start_index_map", {0, 1})) return GatherForm{2, 0, 1, 1};
    if (Is(g, "start_index_map", {1, 0})) return GatherForm{2, 1, 0, 1};
  }
  if (batched && coords == 1 && batch_rank == 1 && Is(g, "operand_batching_dims", {0}) &&
      Is(g, "start_indices_batching_dims", {0}) && Is(g, "offset_dims", {}) &&
      Is(g, "collapsed_slice_dims", {1}) && Is(g, "start_index_map", {1}) &&
      Is(g, "slice_sizes", {1, 1}) && idx.dims[0] == table.dims[0])
    return GatherForm{1, -1, 0, 1};
  return std::nullopt;
}

// One batch of `n` index vectors: copy them into SMEM, then one slice copy per vector.
// r13 / r19: the largest row / column start; r15: bytes per table row; r18: the slice's
// position (its row when the row comes from the position).
void EmitBatch(std::ostream& s, const GatherForm& f, int64_t n, const std::string& desc,
               const std::string& label) {
  auto load_clamped = [&](int reg, int64_t coord, int max_reg) {
    const std::string l = label + "_" + std::to_string(reg);
    s << "    sld r" << reg << ", r3, " << coord * 4 << "\n    blt r" << reg << ", r14, " << l
      << "_lo\n    blt r" << max_reg << ", r" << reg << ", " << l << "_hi\n    jmp " << l << "_ok\n"
      << l << "_lo:\n    li r" << reg << ", 0\n    jmp " << l << "_ok\n"
      << l << "_hi:\n    mov r" << reg << ", r" << max_reg << "\n"
      << l << "_ok:\n";
  };
  s << "    li r2, 0\n    dma.hs r2, r10, " << desc << ", f1\n    wait seq, f1, 1\n"
    << "    li r3, 0\n    li r4, " << n * f.coords * 4 << "\n"
    << label << ":\n";
  if (f.row_coord >= 0)
    load_clamped(5, f.row_coord, 13);
  else
    s << "    mov r5, r18\n";
  s << "    mul r5, r5, r15\n    add r5, r5, r11\n";
  if (f.col_coord >= 0) {
    load_clamped(6, f.col_coord, 19);
    s << "    shli r6, r6, 2\n    add r5, r5, r6\n";
  }
  s << "    dma.hh r12, r5, slice, f0\n    addi r12, r12, " << f.width * 4
    << "\n    addi r18, r18, 1\n    addi r3, r3, " << f.coords * 4 << "\n    blt r3, r4, " << label
    << "\n    addi r10, r10, " << n * f.coords * 4 << "\n";
}

}  // namespace

std::string GatherKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (instr.opcode() != hlo::Opcode::kGather || instr.operand_count() != 2) return "";
  const hlo::Shape &table = instr.operand(0)->shape(), &idx = instr.operand(1)->shape();
  if (table.rank() != 2 || idx.type != hlo::PrimitiveType::kS32 ||
      hlo::PrimitiveTypeBits(table.type) != 32 || instr.shape().type != table.type)
    return "";
  const std::optional<GatherForm> form = FormOf(instr);
  if (!form) return "";
  const int64_t rows = table.dims[0];
  const int64_t vectors = static_cast<int64_t>(ByteSize(idx)) / 4 / form->coords;
  const int64_t slice = form->width * 4, per_batch = kBatchBytes / 4 / form->coords;
  if (vectors == 0 || slice == 0) return "";
  std::ostringstream s;
  s << "# gather of " << vectors << " slices of " << slice
    << " bytes (compiler/lowering/data/gather_kernel.cc)\n"
    << ".tag \"" << instr.name() << "\"\n"
    << ".desc slice rows=1 row_bytes=" << slice << " src_stride=0 dst_stride=0\n"
    << ".desc batch rows=1 row_bytes=" << per_batch * form->coords * 4
    << " src_stride=0 dst_stride=0\n";
  const int64_t full = vectors / per_batch, tail = vectors % per_batch;
  if (tail)
    s << ".desc tail rows=1 row_bytes=" << tail * form->coords * 4
      << " src_stride=0 dst_stride=0\n";
  s << "    sflag f0, 0\n    sflag f1, 0\n"
    << assembly::LoadAddress(10, c.address(instr.operand(1)), 9)
    << assembly::LoadAddress(11, c.address(instr.operand(0)), 9)
    << assembly::LoadAddress(12, c.address(&instr), 9) << "    li r13, " << rows - 1
    << "\n    li r14, 0\n    li r15, " << table.dims[1] * 4 << "\n    li r18, 0\n    li r19, "
    << table.dims[1] - form->width << "\n";
  if (full > 0) {  // the full batches loop; r16 counts them
    s << "    li r16, 0\n    li r17, " << full << "\nbatches:\n";
    EmitBatch(s, *form, per_batch, "batch", "rows");
    s << "    addi r16, r16, 1\n    blt r16, r17, batches\n";
  }
  if (tail) EmitBatch(s, *form, tail, "tail", "tail_rows");
  s << "    wait seq, f0, " << vectors << "\n";
  op.kind = KernelKind::kDma;
  op.hbm_bytes = static_cast<uint64_t>(vectors * form->coords * 4 + 2 * vectors * slice);
  op.exact = true;
  return s.str();
}

}  // namespace tpusim::lowering
