// The pieces of the convolution program (conv_kernel.cc assembles them): the registers and
// sync flags they share, and the emitters of each part.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/lowering/conv/conv_asm.h"
#include "compiler/lowering/conv/conv_plan.h"

namespace tpusim::lowering::conv {

// Scalar registers (r0 stays 0). Long-lived state first, then per-tap temporaries.
enum Reg : int {
  kChunk = 1,    // chunk index
  kBand,         // SMEM offset (8 x band) of the current chunk's band
  kNextBand,     // the same for the next chunk
  kNextSrc,      // HBM: input row 0 of the next chunk's band, first image of the chunk
  kOutPtr,       // HBM: output pixel 0 of the current chunk
  kInCur,        // VMEM input buffer of the current chunk
  kInNext,       // VMEM input buffer of the next chunk
  kCo,           // cout block
  kParity,       // alternates per cout block: accumulator region and output buffer
  kAcc,          // first accumulator row of the region
  kOutBuf,       // VMEM output buffer
  kWeights,      // VMEM weight tiles of this cout block
  kKindTable,    // SMEM: line ranges of the current band kind
  kLineLo = 16,  // first line of a tap; when draining, the HBM output address
  kLineHi,       // end line of a tap
  kBase,         // VMEM: a tap's input at position 0 of line kLineLo
  kEnd,          // VMEM: the loop-end address of the MXU whose address drives the loop
  kAccLine,      // accumulator row of position 0 of line kLineLo
  kTile,         // VMEM: weight tile
  kCount,        // loop counter
  kTmp,          // temporaries
  kTmp2,
  kAddr = 25,     // + MXU: LHS address
  kAccRow = 27,   // + MXU: accumulator row
  kRows = 29,     // + MXU: rows per matmul or pop
  kScratch = 31,  // ConvAsm's
};

// Sync flags (in a lowered program, kernels own f0..f15).
enum Flag : int {
  kInLoaded = 0,     // input copies of a chunk landed (seq waits for all of them)
  kInFree = 1,       // + MXU: the MXU finished reading a chunk's buffer
  kPopped = 3,       // + MXU: the MXU popped a cout block into the output buffer
  kOutFree = 5,      // + parity: the output buffer's copy to HBM finished
  kZeroFill = 7,     // the VPU wrote the zero block; then the zero fills
  kSetup = 8,        // weight copies of the preamble
  kConverted = 9,    // the VPU rounded staged f32 into place (the weights, then each chunk)
  kStageFree = 10,   // the VPU is done reading the staging area
  kOutRounded = 11,  // the VPU rounded the popped results to bf16 (bf16 output)
  kRawLoaded = 12,   // a chunk's input rows landed in the raw area (plan.raw)
  // s.statistics: output buffers whose statistics the VPU has read (a drain takes one
  // before popping, as two buffers alternate); the accumulators folded; a vector in HBM.
  kStatsFree = 13,
  kStatsFolded = 14,
  kStatsOut = 15,
};

// VPU: rounds `bf16_bytes / 2048` f32 vregs from VMEM [reg src] to bf16 at [reg dst];
// `count` is clobbered. `src_bf16`: the source is bf16 already, so this copies it.
void EmitRoundToBf16(ConvAsm& a, int dst, int src, int count, int64_t bf16_bytes,
                     bool src_bf16 = false);

// Zero block and fills, weight tiles, the band tables in SMEM, flag values.
void EmitPreamble(const ConvPlan& p, ConvAsm& a);
// One copy of a chunk's input: offsets from kNextSrc (HBM) and kInNext (VMEM).
struct InputCopy {
  DescShape desc;
  int64_t vmem_offset = 0, hbm_offset = 0;
  // plan.raw: the source in the raw area instead (offset from raw_base), lines raw_plane
  // bytes apart.
  int64_t raw_offset = 0, raw_plane = 0;
};
// plan.raw: the next chunk's input rows of band kind `kind` into the raw area; the DMA
// unit then waits for them before the taps' copies.
void EmitRawCopy(const ConvPlan& p, ConvAsm& a, int64_t kind);
// The copies of a chunk whose band kind is `kind`.
std::vector<InputCopy> InputCopies(const ConvPlan& p, int64_t kind);
// Issues part `group` of `groups` equal parts of those copies; each adds 1 to kInLoaded.
void EmitInputCopies(const ConvPlan& p, ConvAsm& a, int64_t kind, int64_t group, int64_t groups);
// Every tap of one cout step into the accumulator region at kAcc. `at_point(j, false)`
// emits code for point j: before cin block j of the first tap (never skipped, j < cinb),
// or before tap j - cinb + 1. Inside the first tap's cin loop, `at_point(0, true)` emits
// code for points 1..cinb-1 that must check kCount (the cin block) itself.
void EmitTaps(const ConvPlan& p, ConvAsm& a, const std::function<void(int64_t, bool)>& at_point);
// Pops the region into kOutBuf and copies it to the cout block's place in the output.
void EmitDrain(const ConvPlan& p, ConvAsm& a);
// s.statistics: zeroes the accumulators (preamble); waits until the VPU has read the
// statistics of the buffer a drain pops into; adds the rounded bf16 results of the step's
// cout blocks and their squares into them (drain); folds them over sublanes and copies the
// per-channel vectors to HBM (after the last chunk).
void EmitZeroStatistics(const ConvPlan& p, ConvAsm& a);
void EmitTakeStatisticsBuffer(const ConvPlan& p, ConvAsm& a);  // before a drain's pops
void EmitAccumulateStatistics(const ConvPlan& p, ConvAsm& a);
void EmitStoreStatistics(const ConvPlan& p, ConvAsm& a);

}  // namespace tpusim::lowering::conv
