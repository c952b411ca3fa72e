// The registers, flags and shared emitters of the weight-gradient kernel (conv_wgrad.cc
// assembles the program, conv_wgrad_copies.cc emits the copies of a block).
#pragma once

#include "compiler/lowering/conv/conv_asm.h"
#include "compiler/lowering/conv/conv_wgrad_plan.h"

namespace tpusim::lowering::wgrad {

// kRow, kXSrc, kDySrc describe the next block to copy; kBuf is the current block's buffer
// (staging areas and tiles), kNext the next one's.
enum Reg : int {
  kBlock = 1,
  kRow,
  kXSrc,
  kDySrc,
  kParity,
  kBuf,
  kT1,
  kT2,
  kT3,
  kNext,
  kOther,
  kLhs0 = 12,   // + MXU: the dY tile of a matmul
  kRows0 = 14,  // + MXU: its rows
  kAddr = 26
};
// Flags: copies landed (per parity), staging free, tiles ready, tiles free (per parity),
// zeros, pops, results out.
enum Flag : int {
  kLoaded0 = 0,
  kStageFree,
  kReady,
  kFree0,
  kFree1,
  kZeroed,
  kPopped,
  kOut,
  kLoaded1
};

// VPU: zero `bytes` (a multiple of 4096) of VMEM from register `base` + `offset` with v0
// (clobbers kT1, kT2).
void ZeroVmem(ConvAsm& a, int base, int64_t offset, int64_t bytes);
// VPU: 16 vregs from VMEM register `base` + `src` (8 rows of 128 f32, or of 128 bf16 when
// `from_bf16`, each, consecutive), transposed, stored from register `dst` as 16 x 8 rows:
// bf16 (a tile) or f32. Clobbers kAddr and advances `dst`.
void Transpose(ConvAsm& a, int base, int64_t src, int dst, bool bf16, bool from_bf16 = false);

// Each MXU pops its `regions` 128-row regions into VMEM `out` + m * `out_bytes` and adds 1
// to `popped`; the VPU waits for all of them.
void EmitPopRegions(ConvAsm& a, int64_t mxus, int64_t regions, int64_t out, int64_t out_bytes,
                    int popped);
// VPU: MXU 1's popped partial sums (at `out` + `out_bytes`) added onto MXU 0's (at `out`).
void EmitAddPartialSums(ConvAsm& a, int64_t out, int64_t out_bytes);

// The next block's copies into kNext (the first and last block of an image may copy fewer
// lines), each adding 1 to `flag`; then kRow/kXSrc/kDySrc move to the block after it.
void EmitNextBlock(const Plan& p, ConvAsm& a, int flag);

}  // namespace tpusim::lowering::wgrad
