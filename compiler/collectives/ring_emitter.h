// Emits the two phases every ring collective is made of, for one ring position:
// reduce-scatter (chunks travel the ring, each hop folding in the receiver's chunk) and
// all-gather (finished chunks travel the ring into every member's output). VMEM offsets
// are relative to register r29 (the buffer set); r20 / r22 must hold the global VMEM base
// of the next / this core (EmitRingRegisters).
#pragma once

#include <cstdint>
#include <sstream>
#include <vector>

namespace tpusim::collectives {

enum class ReduceOp { kSum, kMax };

// Flags the phases use on every participant (each for one purpose).
inline constexpr int kFlagInput = 0;      // input arrived in VMEM
inline constexpr int kFlagReceived = 1;   // a reduce-scatter chunk arrived
inline constexpr int kFlagAdded = 2;      // the VPU finished a step's reduction
inline constexpr int kFlagGathered = 3;   // an all-gather chunk arrived
inline constexpr int kFlagLocalCopy = 4;  // this core's own chunk is in the output
inline constexpr int kFlagStored = 5;     // the result is back in HBM

class RingEmitter {
 public:
  RingEmitter(std::ostringstream& out, const std::vector<int>& ring, int position,
              uint64_t chunk_bytes);
  int size() const { return n_; }
  int position() const { return p_; }
  // Chunk index c mod n.
  uint64_t Chunk(int64_t c) const { return static_cast<uint64_t>(((c % n_) + n_) % n_); }

  // r20, r21, r22 (and r29 = 0 unless a caller sets buffer sets itself).
  void EmitRingRegisters();
  // VMEM offset `off` (relative to r29) into register r; "r20"/"r22" makes it global.
  void Vmem(int r, uint64_t off, const char* global = nullptr);
  // n-1 steps: step s sends chunk (p + shift - s) of `data` to the next core's slot s and
  // folds the chunk received into chunk (p + shift - 1 - s). Leaves chunk (p + shift + 1)
  // fully reduced in `data`; the VPU signals kFlagAdded after each fold.
  void ReduceScatter(uint64_t data, uint64_t slots, int64_t shift, ReduceOp op);
  // Copies chunk `mine` of `data` to `out`, then n-1 steps: step s sends chunk (mine - s)
  // into the next core's `out`. `wait_first` is the flag (and DMA-queue wait) that says
  // chunk `mine` is ready, or -1. Ends with the DMA queue past every arrival.
  void AllGather(uint64_t data, uint64_t out, uint64_t mine, int wait_first);

 private:
  std::ostringstream& s_;
  const std::vector<int>& ring_;
  int n_, p_;
  uint64_t c_;
};

}  // namespace tpusim::collectives
