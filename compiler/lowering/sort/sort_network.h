// A bitonic sorting network on the VPU. Two layouts of a line of `length` elements:
// - lanes = 1: element i of every line sits in vreg i of an array (one line per f32[8,128]
//   slot, so 1024 lines sort at once); every compare-exchange is elementwise between two
//   whole vregs.
// - lanes = 128: element i of line s sits in vreg i / 128, sublane s, lane i % 128 (8 lines
//   at once). Partners 128 or more apart are whole vregs (a lane-reversed one in a merge's
//   mirror step); nearer ones are lanes of the same vreg, brought together by `vperm`.
// Ties break on each element's original position, kept in an index array, so the network
// computes the stable sort.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::lowering {

inline constexpr int64_t kSortLanes = 128;

struct SortNetworkPlan {
  int64_t length = 0;            // elements per line: a power of two, at least 2 (128 with lanes)
  int64_t lanes = 1;             // 1 or kSortLanes (the layouts above)
  std::vector<uint64_t> arrays;  // VMEM bases: the sorted operands, then the index array
  size_t key = 0;                // the array the comparator reads
  bool s32 = false;              // keys are s32 bit patterns (else f32)
  bool descending = false;       // comparator GT (else LT)
  std::string labels;            // prefix of the network's labels (unique in the kernel)
  uint64_t lane_tables = 0;      // lanes: VMEM of SortLaneTables' 22 vregs
};

// At most this many arrays (v0..v9 hold their pairs; v10..v31 are temporaries).
inline constexpr size_t kSortMaxArrays = 5;

// Code that writes, at `base` in VMEM, the lane tables of the lanes layout (built through
// `scratch`, 129 vregs of VMEM): for b = 0..6, vreg b holds the partner lane l ^ 2^b, vreg
// 7 + b the mirror partner l ^ (2^(b+1) - 1), vreg 14 + b 1.0 where bit 2^b of l is clear;
// vreg 21 the lane l itself, all as f32. Uses flag `flag` (0 on entry), r1..r3, v0..v3.
std::string SortLaneTables(uint64_t base, uint64_t scratch, int flag);

// The network's assembly: every step is a `vloop` over its longer dimension inside a scalar
// loop over the other. Uses r1..r4 and r5.. (two pointers per array) and v0..v31; expects
// the index array to hold each element's position in the line as f32.
std::string SortNetwork(const SortNetworkPlan& plan);

// VPU instructions the network issues per group (its cost: one ALU, load/store or
// cross-lane cycle each at the shipped configuration).
int64_t SortNetworkInstructions(const SortNetworkPlan& plan);

}  // namespace tpusim::lowering
