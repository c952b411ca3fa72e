#include "compiler/lowering/gather_kernel.h"

#include <sstream>

#include "compiler/lowering/asm_util.h"
#include "compiler/lowering/data_parallel.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;

constexpr int64_t kBatch = 1024;  // indices per SMEM batch: 4 KiB of the kernels' SMEM

bool Is(const HloInstruction& i, const char* attr, const std::vector<int64_t>& want) {
  const hlo::IntList* l = i.GetIntList(attr);
  return l && std::vector<int64_t>(l->begin(), l->end()) == want;
}

// One batch of `n` indices: copy them into SMEM, then one row copy per index.
void EmitBatch(std::ostream& s, int64_t n, const std::string& desc, const std::string& label) {
  s << "    li r2, 0\n    dma.hs r2, r10, " << desc << ", f1\n    wait seq, f1, 1\n"
    << "    li r3, 0\n    li r4, " << n * 4 << "\n"
    << label << ":\n    sld r5, r3, 0\n    blt r5, r14, " << label << "_lo\n    blt r13, r5, "
    << label << "_hi\n    jmp " << label << "_ok\n"
    << label << "_lo:\n    li r5, 0\n    jmp " << label << "_ok\n"
    << label << "_hi:\n    mov r5, r13\n"
    << label << "_ok:\n    mul r5, r5, r15\n    add r5, r5, r11\n    dma.hh r12, r5, row, f0\n"
    << "    add r12, r12, r15\n    addi r3, r3, 4\n    blt r3, r4, " << label << "\n"
    << "    addi r10, r10, " << n * 4 << "\n";
}

}  // namespace

std::string GatherKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (instr.opcode() != hlo::Opcode::kGather || instr.operand_count() != 2) return "";
  const hlo::Shape &table = instr.operand(0)->shape(), &idx = instr.operand(1)->shape();
  if (table.rank() != 2 || idx.type != hlo::PrimitiveType::kS32 ||
      hlo::PrimitiveTypeBits(table.type) != 32 || instr.shape().type != table.type)
    return "";
  const int64_t r = idx.rank();
  if (instr.GetInt("index_vector_dim").value_or(r) != r || !Is(instr, "offset_dims", {r}) ||
      !Is(instr, "collapsed_slice_dims", {0}) || !Is(instr, "start_index_map", {0}) ||
      !Is(instr, "slice_sizes", {1, table.dims[1]}))
    return "";
  if (c.split > 0 && (HasDim(idx, c.split) || HasDim(table, c.split))) return "";
  const int64_t n = idx.ElementCount(), row = table.dims[1] * 4;
  if (n == 0 || row == 0) return "";
  std::ostringstream s;
  s << "# gather of " << n << " rows of " << row << " bytes (compiler/lowering/gather_kernel.cc)\n"
    << ".tag \"" << instr.name() << "\"\n"
    << ".desc row rows=1 row_bytes=" << row << " src_stride=0 dst_stride=0\n"
    << ".desc batch rows=1 row_bytes=" << kBatch * 4 << " src_stride=0 dst_stride=0\n";
  const int64_t full = n / kBatch, tail = n % kBatch;
  if (tail) s << ".desc tail rows=1 row_bytes=" << tail * 4 << " src_stride=0 dst_stride=0\n";
  s << "    sflag f0, 0\n    sflag f1, 0\n"
    << LoadAddress(10, c.address(instr.operand(1)), 9)
    << LoadAddress(11, c.address(instr.operand(0)), 9) << LoadAddress(12, c.address(&instr), 9)
    << "    li r13, " << table.dims[0] - 1 << "\n    li r14, 0\n    li r15, " << row << "\n";
  if (full > 0) {  // the full batches loop; r16 counts them
    s << "    li r16, 0\n    li r17, " << full << "\nbatches:\n";
    EmitBatch(s, kBatch, "batch", "rows");
    s << "    addi r16, r16, 1\n    blt r16, r17, batches\n";
  }
  if (tail) EmitBatch(s, tail, "tail", "tail_rows");
  s << "    wait seq, f0, " << n << "\n";
  op.kind = KernelKind::kDma;
  op.hbm_bytes = static_cast<uint64_t>(n * 4 + 2 * n * row);
  op.exact = true;
  return s.str();
}

}  // namespace tpusim::lowering
