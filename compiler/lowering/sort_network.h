// A bitonic sorting network on the VPU over lines laid out across vregs: element i of every
// line sits in vreg i of an array (one line per f32[8,128] slot, so 1024 lines sort at
// once), and every compare-exchange is elementwise between two whole vregs. Ties break on
// each element's original position, kept in an index array, so the network computes the
// stable sort.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::lowering {

struct SortNetworkPlan {
  int64_t length = 0;            // vregs per array: a power of two, at least 2
  std::vector<uint64_t> arrays;  // VMEM bases: the sorted operands, then the index array
  size_t key = 0;                // the array the comparator reads
  bool s32 = false;              // keys are s32 bit patterns (else f32)
  bool descending = false;       // comparator GT (else LT)
  std::string labels;            // prefix of the network's labels (unique in the kernel)
};

// At most this many arrays (v0..v9 hold their pairs; v16..v31 are temporaries).
inline constexpr size_t kSortMaxArrays = 5;

// The network's assembly: every step is a `vloop` over its longer dimension inside a scalar
// loop over the other. Uses r1..r4 and r5.. (two pointers per array) and v0..v31; expects
// the index array to hold each slot's position (vreg i all i) as f32.
std::string SortNetwork(const SortNetworkPlan& plan);

// Compare-exchanges the network makes per slot: length / 2 per step, log2(length) *
// (log2(length) + 1) / 2 steps.
int64_t SortCompareExchanges(int64_t length);

}  // namespace tpusim::lowering
