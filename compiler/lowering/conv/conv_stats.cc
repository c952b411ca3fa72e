// Batch-norm statistics of a convolution's output, computed while it drains: the VPU,
// which rounds each popped block to bf16 anyway, reads the rounded vregs back and adds
// them and their squares into per-cout-block accumulators, so the statistics cost no
// pass over the output in HBM (what XLA's multi-output fusion of a convolution with the
// reductions of batch norm reaches on TPU).
#include <string>

#include "compiler/lowering/conv/conv_emit.h"

namespace tpusim::lowering::conv {
namespace {

constexpr int64_t kVregBf16Bytes = kZeroBlockBytes / 2;    // bf16[8,128]
constexpr int64_t kStatsBlockBytes = 2 * kZeroBlockBytes;  // a cout block's two accumulators

}  // namespace

void EmitZeroStatistics(const ConvPlan& p, ConvAsm& a) {
  if (!p.s.statistics) return;
  a << "vmovi v0, 0.0";
  a.Li(kTmp, p.stats);
  a.Li(kCount, p.stats_bytes / kZeroBlockBytes);
  a << "vloop " + R(kCount) + ", 1"
    << "vsts v0, " + R(kTmp) + ", " + std::to_string(kZeroBlockBytes);
  a << "sflag " + F(kStatsFree) + ", 2"
    << "sflag " + F(kStatsFolded) + ", 0"
    << "sflag " + F(kStatsOut) + ", 0";
}

void EmitTakeStatisticsBuffer(const ConvPlan& p, ConvAsm& a) {
  if (p.s.statistics) a << "wait seq, " + F(kStatsFree) + ", 1";
}

// After the step's blocks are rounded in place (bf16 rows at kOutBuf, block m at
// m * block_rows()), beside their copies out; the buffer is free for the MXUs once both
// are done.
void EmitAccumulateStatistics(const ConvPlan& p, ConvAsm& a) {
  if (!p.s.statistics) return;
  const int64_t bps = p.blocks_per_step();
  a.MulImm(kTile, kCo, bps * kStatsBlockBytes);
  a.AddImm(kTile, kTile, p.stats);
  for (int64_t m = 0; m < bps; ++m) {
    a.AddImm(kEnd, kTile, kZeroBlockBytes);
    a.AddImm(kBase, kOutBuf, m * p.block_rows() * kSlotBytes);
    a.Li(kCount, p.block_rows() / 8);
    a << "vld v1, " + R(kTile) << "vld v2, " + R(kEnd) << "vloop " + R(kCount) + ", 4"
      << "vlds.bf16 v0, " + R(kBase) + ", " + std::to_string(kVregBf16Bytes) << "vadd v1, v1, v0"
      << "vmul v3, v0, v0"
      << "vadd v2, v2, v3"
      << "vst v1, " + R(kTile) << "vst v2, " + R(kEnd);
    a.AddImm(kTile, kTile, kStatsBlockBytes);
  }
  a << "signal vpu, " + F(kStatsFree) + ", 1";
}

// After the last chunk: each accumulator folded over its 8 sublanes (every sublane then
// holds the total), and row 0 of it copied to the block's channels of the HBM vector.
void EmitStoreStatistics(const ConvPlan& p, ConvAsm& a) {
  if (!p.s.statistics) return;
  a.Li(kTmp, p.stats);
  a.Li(kCount, p.coutb * 2);
  a << "vloop " + R(kCount) + ", 3"
    << "vlds v0, " + R(kTmp) + ", " + std::to_string(kZeroBlockBytes) << "vredsub.sum v1, v0"
    << "vsts v1, " + R(kTmp) + ", " + std::to_string(kZeroBlockBytes);
  a << "signal vpu, " + F(kStatsFolded) + ", 1"
    << "wait dma, " + F(kStatsFolded) + ", 1";
  const int64_t tail = p.s.cout - (p.coutb - 1) * kMxuEdge;
  for (int64_t co = 0; co < p.coutb; ++co) {
    const int64_t channels = co + 1 < p.coutb ? kMxuEdge : tail;
    const std::string desc = a.Desc({1, channels * 4, 0, 0});
    for (int64_t k = 0; k < 2; ++k) {
      const uint64_t hbm = k == 0 ? p.s.sum : p.s.sum_squares;
      a.Li(kLineLo, static_cast<int64_t>(hbm) + co * kMxuEdge * 4);
      a.Li(kTmp, p.stats + co * kStatsBlockBytes + k * kZeroBlockBytes);
      a << "dma.vh " + R(kLineLo) + ", " + R(kTmp) + ", " + desc + ", " + F(kStatsOut);
    }
  }
  a << "wait seq, " + F(kStatsOut) + ", " + std::to_string(2 * p.coutb);
}

}  // namespace tpusim::lowering::conv
