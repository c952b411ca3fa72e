// The code a conditional starts with (control_flow.cc): the sequencer reads the predicate or
// branch index from HBM into SMEM and jumps to the chosen branch.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::lowering {

struct BranchSelect {
  uint64_t selector = 0;  // HBM address of the pred (f32 0/1 word) or s32 branch index
  bool pred = false;      // pred: nonzero -> branch 0 (true), zero -> branch 1 (false)
  int branches = 2;
  std::string label;  // branch k starts at `label`_b<k>; `label` is unique in the program
  std::string tag;    // the conditional's name
};

// Copies the selector word into SMEM by DMA (`dma.hs`, flag f14), loads it (`sld`) and
// jumps to `label`_b<k>: for an index, branch k when it equals k, else the last branch
// (XLA's rule for an index out of range, negative included).
std::string BranchDispatch(const BranchSelect& s);

}  // namespace tpusim::lowering
