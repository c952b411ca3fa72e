// A short all-reduce by recursive doubling (the butterfly): in round r each member swaps its
// whole partial result with the member whose index differs in bit r (members in core order:
// on a v3-8 board the on-chip pair, then the x neighbour, then the y neighbour, each one hop)
// and adds the two, so after log2(n) rounds every member holds the reduction. A ring takes
// 2(n - 1) steps, each a hop latency and a DMA start-up, to move 2(n - 1)/n of the array;
// the butterfly takes log2(n) steps moving all of it each time: fewer latencies, more bytes,
// the better algorithm for short arrays (Thakur, Rabenseifner and Gropp, "Optimization of
// Collective Communication Operations in MPICH", IJHPCA 2005: recursive doubling for short
// messages). Both members add the same two values, so every member gets the same bits.
// Algorithm and choice: docs/collectives.md.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/collectives/ring_allreduce.h"

namespace tpusim::collectives {

// Arrays up to this many bytes (padded to whole vregs) go by the butterfly when the group
// is a power of two: the compiler's choice, below the crossover measured on v3-8
// (BM_AllReduceButterfly against BM_AllReduceBusBandwidth: 256 KiB 12.2 us against the
// ring's 20.5; 1 MiB 34.6 against 28.1; docs/collectives.md).
inline constexpr uint64_t kButterflyMaxBytes = 256 << 10;

// Whether a group of `members` cores (2, 4 or 8) reduces `bytes` (unpadded) by the butterfly.
bool TakesButterfly(int members, uint64_t bytes);

// The VMEM its program stages from `vmem_base` on: partial results 0..rounds and one receive
// slot per round, each `bytes` padded to whole vregs.
uint64_t ButterflyVmemBytes(int members, uint64_t bytes);

// The program of member `position` of `spec.ring` (any order: the rounds pair members in
// core order). Takes a plain array (hbm_address, valid_bytes, hbm_output) or pieces; not
// bidirectional. Throws std::invalid_argument on a spec it cannot serve.
std::string ButterflyAllReduceProgram(const RingAllReduceSpec& spec, int position);

}  // namespace tpusim::collectives
