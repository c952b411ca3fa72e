// Small helpers for emitting ISA assembly text: 64-bit addresses from 32-bit immediates,
// scoping a kernel's labels and names so kernels can be concatenated into one program,
// and the drain barrier that separates consecutive kernels.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::assembly {

// "    li rd, ...\n" lines that leave the 64-bit `value` in register `rd` (immediates are
// 32-bit signed, so larger values are built from pieces); `scratch` is clobbered.
std::string LoadAddress(int rd, uint64_t value, int scratch);

// Renames every label, `.desc` and `.equ` name defined in `kernel` (and their uses) to
// `prefix` + name, and drops `halt` lines, so the kernel can sit inside a larger program.
std::string ScopeKernel(const std::string& kernel, const std::string& prefix);

// Sync flags of a lowered program: kernels use f0..f15, collectives f16..f29.
inline constexpr int kCollectiveFlagBase = 16;
inline constexpr int kBarrierFlag = 30;  // the drain barrier between kernels
inline constexpr int kInfeedFlag = 31;   // the host's infeed (sim/host.h)

// SMEM: kernels use [0, kKernelSmemBytes); while-loop counters live above it, one word
// per nesting level (16 KiB of SMEM on v3, sim/configs).
inline constexpr int kKernelSmemBytes = 0x3f00;
inline constexpr int kLoopCounterSmem = kKernelSmemBytes;

// Waits until every unit (`mxus` MXUs, the VPU and the DMA engines) has finished the work
// issued before it: the next kernel may reset flags and reuse VMEM.
std::string DrainBarrier(int mxus);
// Its two halves: every queue signals kBarrierFlag once the work before it is done; the
// sequencer waits for them all, then clears the kernel flags. Between them the sequencer may
// issue a kernel of the other window (isa `window`, the lagged barrier of lowerer.h).
std::string DrainSignals(int mxus);
std::string DrainWait(int mxus);
// `kernel` without the `wait seq` lines it ends with (blank and comment lines aside): the
// drain barrier after it awaits the same work, since each queue's barrier signal follows
// the copies and signals issued before it.
std::string DropTrailingSeqWaits(const std::string& kernel);

}  // namespace tpusim::assembly
