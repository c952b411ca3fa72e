// The inner loops: per tap and cin block, the weight tile goes into every MXU, then each
// line's positions stream as one matmul per MXU into the accumulator rows of that line.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>

#include "compiler/lowering/conv/conv_emit.h"

namespace tpusim::lowering::conv {
namespace {

// One cin block of tap `t`: kBase/kEnd/kAccLine address line kLineLo; kTile the weights.
// `op` is mxu.mm (the first tap's first block) or mxu.mma.
void EmitBlock(const ConvPlan& p, ConvAsm& a, const ConvTap& t, const std::string& op) {
  int64_t driver = -1;  // the MXU whose address register ends the line loop
  const int64_t cout_block_bytes = p.weight_taps * p.cinb * kTileBytes;
  for (int64_t m = 0; m < p.mxus; ++m) {
    if (!t.count[m]) continue;
    if (p.split_cout) a.AddImm(kTmp2, kTile, m * cout_block_bytes);  // MXU m's cout block
    a << std::string(p.s.kernel_oi ? "mxu.ldwt m" : "mxu.ldw m") + std::to_string(m) + ", " +
             R(p.split_cout ? kTmp2 : kTile);
    a.AddImm(kAddr + m, kBase, t.first[m] * kSlotBytes);
    a.AddImm(kAccRow + m, kAccLine, t.first[m] - p.part_base(m));
    a.Li(kRows + m, t.count[m]);
    if (driver < 0) driver = m, a.AddImm(kTmp, kEnd, t.first[m] * kSlotBytes);
  }
  const std::string loop = a.NewLabel("line");
  a.Label(loop);
  for (int64_t m = 0; m < p.mxus; ++m)
    if (t.count[m])
      a << op + " m" + std::to_string(m) + ", " + R(kAddr + m) + ", " + R(kRows + m) + ", " +
               R(kAccRow + m);
  for (int64_t m = 0; m < p.mxus; ++m) {
    if (!t.count[m]) continue;
    a.AddImm(kAddr + m, kAddr + m, p.row_bytes);
    a.AddImm(kAccRow + m, kAccRow + m, p.acc_line);
  }
  a << "blt " + R(kAddr + driver) + ", " + R(kTmp) + ", " + loop;
}

// Advances kTile, kBase and kEnd to the next cin block.
void NextBlock(const ConvPlan& p, ConvAsm& a) {
  a.AddImm(kTile, kTile, kTileBytes);
  a.AddImm(kBase, kBase, p.cin_block_bytes);
  a.AddImm(kEnd, kEnd, p.cin_block_bytes);
}

void EmitTap(const ConvPlan& p, ConvAsm& a, const ConvTap& t, bool first,
             const std::function<void(bool)>& before_block) {
  bool any = false;
  for (int64_t c : t.count) any = any || c > 0;
  if (!any) return;  // no output column reads an input column through this tap
  const std::string done = a.NewLabel("tap_done");
  a << "# tap dy=" + std::to_string(t.dy) + " dx=" + std::to_string(t.dx);
  a << "sld " + R(kLineLo) + ", " + R(kKindTable) + ", " + std::to_string(8 * t.dy);
  a << "sld " + R(kLineHi) + ", " + R(kKindTable) + ", " + std::to_string(8 * t.dy + 4);
  a << "bge " + R(kLineLo) + ", " + R(kLineHi) + ", " + done;
  // Input of position 0, line l: slot, row l * stride + dy, column offset, image 0.
  const int64_t offset =
      t.slot * p.slot_bytes + t.row_offset * p.row_bytes + t.column_offset * p.imgs * kSlotBytes;
  for (auto [reg, line] : {std::pair{kBase, kLineLo}, std::pair{kEnd, kLineHi}}) {
    a.MulImm(reg, line, p.row_bytes);
    a << "add " + R(reg) + ", " + R(reg) + ", " + R(kInCur);
    a.AddImm(reg, reg, offset);
  }
  a.MulImm(kAccLine, kLineLo, p.acc_line);
  a << "add " + R(kAccLine) + ", " + R(kAccLine) + ", " + R(kAcc);
  a.AddImm(kTile, kWeights, t.index * p.cinb * kTileBytes);
  int64_t from = 0;
  if (first) {
    before_block(false);
    EmitBlock(p, a, t, p.zero_init ? "mxu.mma" : "mxu.mm");
    from = 1;
    if (p.cinb > 1) NextBlock(p, a);
  }
  if (from < p.cinb) {
    const std::string loop = a.NewLabel("cin");
    a.Li(kCount, from);
    a.Label(loop);
    if (first) before_block(true);
    EmitBlock(p, a, t, "mxu.mma");
    NextBlock(p, a);
    a << "addi " + R(kCount) + ", " + R(kCount) + ", 1";
    a.Li(kTmp2, p.cinb);
    a << "blt " + R(kCount) + ", " + R(kTmp2) + ", " + loop;
  }
  a.Label(done);
}

// Copies the popped cout block(s) to HBM, adding 1 to the parity's kOutFree each: rows
// are (line, column, image) in VMEM, (image, line, column) in HBM.
void EmitOutputCopies(const ConvPlan& p, ConvAsm& a) {
  const int64_t row = p.out_row_bytes(), elem = p.out_elem();
  auto out_desc = [&](int64_t channels) {
    return a.Desc({p.band * p.ow, channels * elem, p.imgs * row, p.out_pixel_bytes(), p.imgs, row,
                   p.oh * p.ow * p.out_pixel_bytes()});
  };
  const int64_t tail = p.s.cout - (p.coutb - 1) * kMxuEdge;
  const std::string full = out_desc(kMxuEdge), last = out_desc(tail);
  const std::string odd_copy = a.NewLabel("odd_copy"), copied = a.NewLabel("copied");
  // kLineLo: HBM address of the step's first cout block.
  a.MulImm(kLineLo, kCo, p.blocks_per_step() * row);
  a << "add " + R(kLineLo) + ", " + R(kOutPtr) + ", " + R(kLineLo);
  auto copy = [&](int64_t parity) {
    const std::string flag = F(kOutFree + parity);
    for (int64_t m = 0; m < p.blocks_per_step(); ++m) {
      a.AddImm(kTmp, kLineLo, m * row);
      a.AddImm(kTmp2, kOutBuf, p.split_cout ? p.out_offset(m) / 4 * elem : 0);
      const std::string dma = "dma.vh " + R(kTmp) + ", " + R(kTmp2) + ", ";
      if (tail == kMxuEdge || m + 1 < p.blocks_per_step()) {
        a << dma + full + ", " + flag;
        continue;
      }
      const std::string not_last = a.NewLabel("not_last"), sent = a.NewLabel("sent");
      a.Li(kScratch, p.cout_steps() - 1);
      a << "bne " + R(kCo) + ", " + R(kScratch) + ", " + not_last << dma + last + ", " + flag
        << "jmp " + sent;
      a.Label(not_last);
      a << dma + full + ", " + flag;
      a.Label(sent);
    }
  };
  a << "bne " + R(kParity) + ", r0, " + odd_copy;
  copy(0);
  a << "jmp " + copied;
  a.Label(odd_copy);
  copy(1);
  a.Label(copied);
}

// Zeroes the accumulator rows of every line each MXU pops: zero rows times zero weights.
void EmitZeroTap(const ConvPlan& p, ConvAsm& a) {
  a << "# zero the accumulators (padding: some output pixels see no tap)";
  a.Li(kTmp2, p.zero_rows);
  for (int64_t m = 0; m < p.mxus; ++m) {
    a << "mxu.ldw m" + std::to_string(m) + ", " + R(kTmp2);
    a.Li(kRows + m, p.part_rows(m));
  }
  a << "mov " + R(kAccLine) + ", " + R(kAcc);
  a.Li(kCount, 0);
  const std::string loop = a.NewLabel("zero_line");
  a.Label(loop);
  for (int64_t m = 0; m < p.mxus; ++m)
    a << "mxu.mm m" + std::to_string(m) + ", " + R(kTmp2) + ", " + R(kRows + m) + ", " +
             R(kAccLine);
  a.AddImm(kAccLine, kAccLine, p.acc_line);
  a << "addi " + R(kCount) + ", " + R(kCount) + ", 1";
  a.Li(kTmp, p.band);
  a << "blt " + R(kCount) + ", " + R(kTmp) + ", " + loop;
}

}  // namespace

void EmitTaps(const ConvPlan& p, ConvAsm& a, const std::function<void(int64_t, bool)>& at_point) {
  if (p.zero_init) {  // the points of the first tap's cin blocks, before the zeroing
    for (int64_t cb = 0; cb < p.cinb; ++cb) at_point(cb, false);
    EmitZeroTap(p, a);
  }
  for (size_t i = 0; i < p.taps.size(); ++i) {
    if (i > 0) at_point(p.cinb + static_cast<int64_t>(i) - 1, false);
    if (p.zero_init)
      EmitTap(p, a, p.taps[i], i == 0, [](bool) {});
    else
      EmitTap(p, a, p.taps[i], i == 0, [&](bool in_loop) { at_point(0, in_loop); });
  }
}

void EmitDrain(const ConvPlan& p, ConvAsm& a) {
  const std::string odd = a.NewLabel("odd_out"), ready = a.NewLabel("out_ready");
  const std::string copies = std::to_string(p.blocks_per_step());
  a << "bne " + R(kParity) + ", r0, " + odd << "wait seq, " + F(kOutFree) + ", " + copies
    << "jmp " + ready;
  a.Label(odd);
  a << "wait seq, " + F(kOutFree + 1) + ", " + copies;
  a.Label(ready);
  EmitTakeStatisticsBuffer(p, a);
  for (int64_t m = 0; m < p.mxus; ++m) {
    a.AddImm(kAddr + m, kOutBuf, p.out_offset(m));
    a.Li(kRows + m, p.part_rows(m));
  }
  a << "mov " + R(kAccLine) + ", " + R(kAcc);
  a.Li(kCount, 0);
  a.Li(kTmp2, p.band);
  const std::string loop = a.NewLabel("pop");
  a.Label(loop);
  for (int64_t m = 0; m < p.mxus; ++m)
    a << "mxu.pop m" + std::to_string(m) + ", " + R(kAddr + m) + ", " + R(kAccLine) + ", " +
             R(kRows + m);
  for (int64_t m = 0; m < p.mxus; ++m) a.AddImm(kAddr + m, kAddr + m, p.line * kAccRowBytes);
  a.AddImm(kAccLine, kAccLine, p.acc_line);
  a << "addi " + R(kCount) + ", " + R(kCount) + ", 1"
    << "blt " + R(kCount) + ", " + R(kTmp2) + ", " + loop;
  for (int64_t m = 0; m < p.mxus; ++m)
    a << "signal mxu" + std::to_string(m) + ", " + F(kPopped + m) + ", 1";
  // bf16 results: the VPU rounds them in place once popped, front to back (row r moves to
  // half its offset), and the copies out wait for it.
  const std::string waiter = p.s.output_bf16 ? "vpu" : "dma";
  for (int64_t m = 0; m < p.mxus; ++m) a << "wait " + waiter + ", " + F(kPopped + m) + ", 1";
  if (p.s.output_bf16) {
    EmitRoundToBf16(a, kOutBuf, kOutBuf, kCount, p.out_buf_bytes / 2);
    a << "signal vpu, " + F(kOutRounded) + ", 1"
      << "wait dma, " + F(kOutRounded) + ", 1";
    EmitAccumulateStatistics(p, a);
  }
  EmitOutputCopies(p, a);
}

}  // namespace tpusim::lowering::conv
