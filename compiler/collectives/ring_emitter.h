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

// kBitOr folds 32-bit patterns: a value each member holds a disjoint part of (zeros
// elsewhere), of any element type, comes out bit for bit.
enum class ReduceOp { kSum, kMax, kBitOr };

// "sum", "max" or "or", for the programs' header comments.
const char* ReduceOpName(ReduceOp op);

// Flags the phases use on every participant (each for one purpose).
inline constexpr int kFlagInput = 0;      // input arrived in VMEM
inline constexpr int kFlagReceived = 1;   // a reduce-scatter chunk arrived
inline constexpr int kFlagAdded = 2;      // the VPU finished a step's reduction
inline constexpr int kFlagGathered = 3;   // an all-gather chunk arrived
inline constexpr int kFlagLocalCopy = 4;  // this core's own chunk is in the output
inline constexpr int kFlagStored = 5;     // the result is back in HBM

// The entry barrier's two flags, one per phase: absolute (collective kernels use f16..f29;
// rings take flag_base + 0..5, a second ring flag_base + 8..13; these two are not theirs).
inline constexpr int kArrivedFlag = 22, kReadyFlag = 23;

// Where a compiled program's collectives meet: an HBM word no kernel uses, at the same
// address on every core, and the board's core count.
struct Mailbox {
  uint64_t address = 0;
  int cores = 0;
  // The two-phase barrier (EmitEntryBarrier) at every entry, or, where the program has one
  // collective (data parallelism's gradient all-reduce, run once per step or per trip of a
  // loop, with the same tokens every time), the targeted handshake.
  bool barrier = true;
};

// Entry of a collective (or of one round of it) inside a compiled program, where a peer may
// still run the kernels before it, which use the memory this collective is about to write
// into: a two-phase barrier of every core on the board. In each phase a core sends a token
// (a 4-byte copy into each other core's mailbox word) and waits for one from each of them,
// the first phase counted on kArrivedFlag, the second on kReadyFlag. No token can count for
// another barrier: a core sends the next barrier's first-phase tokens only after every core
// has sent this one's second-phase tokens, which each sends after its own first-phase wait,
// and likewise for the second phase. (Tokens sent only to a collective's writers, on one
// flag, let a core that is ahead release a wait of the previous collective: difftest seed
// 102755, docs/testing.md.) Every core calls it for every collective with a mailbox.
void EmitEntryBarrier(std::ostringstream& s, int self, const Mailbox& mailbox);

// A ring's entry: the barrier, or, when the mailbox allows it, the targeted handshake: a
// token to each core in `writers` (the cores that write into this one) on kReadyFlag, then
// a wait for `targets` tokens, one from each core this one writes into. Safe only when
// every entry of the program sends and expects the same tokens: a core ahead in the next
// collective could otherwise release a wait of the previous one.
void EmitEntry(std::ostringstream& s, int self, const Mailbox& mailbox,
               const std::vector<int>& writers, int targets);

// Two rings can share one program (a bidirectional all-reduce): each gets its own
// registers and flags (flag + flag_base).
struct RingRegisters {
  const char* next = "r20";  // global VMEM base of the next core
  const char* base = "r29";  // VMEM offset of this ring's buffers
  int flag_base = 0;
  uint64_t vmem_base = 0;  // what EmitRingRegisters puts in `base`
};

class RingEmitter {
 public:
  RingEmitter(std::ostringstream& out, const std::vector<int>& ring, int position,
              uint64_t chunk_bytes, RingRegisters regs = {});
  int size() const { return n_; }
  int position() const { return p_; }
  // Chunk index c mod n.
  uint64_t Chunk(int64_t c) const { return static_cast<uint64_t>(((c % n_) + n_) % n_); }

  // r21 (VMEM space bits), r22 (this core's VMEM), the next register, and base = 0.
  void EmitRingRegisters();
  // VMEM offset `off` (relative to the base register) into register r; "next" or
  // "self" makes it a global address of the next core or this one.
  void Vmem(int r, uint64_t off, const char* global = nullptr);
  // n-1 steps: step s sends chunk (p + shift - s) of `data` to the next core's slot s and
  // folds the chunk received into chunk (p + shift - 1 - s). Leaves chunk (p + shift + 1)
  // fully reduced in `data`; the VPU signals kFlagAdded after each fold.
  void ReduceScatter(uint64_t data, uint64_t slots, int64_t shift, ReduceOp op);
  // One step = its send (DMA queue) then its fold (VPU); two rings interleave these.
  void ReduceScatterStep(uint64_t data, uint64_t slots, int64_t shift, ReduceOp op, int64_t st);
  void ReduceScatterSend(uint64_t data, uint64_t slots, int64_t shift, int64_t st);
  void ReduceScatterFold(uint64_t data, uint64_t slots, int64_t shift, ReduceOp op, int64_t st);
  // Copies chunk `mine` of `data` to `out`, then n-1 steps: step s sends chunk (mine - s)
  // into the next core's `out`. `wait_first` is the flag (and DMA-queue wait) that says
  // chunk `mine` is ready, or -1. Ends with the DMA queue past every arrival.
  void AllGather(uint64_t data, uint64_t out, uint64_t mine, int wait_first);
  // The same in parts, so two rings can interleave their steps.
  void AllGatherBegin(uint64_t data, uint64_t out, uint64_t mine, int wait_first);
  void AllGatherStep(uint64_t data, uint64_t out, uint64_t mine, int64_t st);
  void AllGatherEnd();
  // The all-gather's first send reads this core's chunk from `out` once the local copy is
  // there, not from `data`: after AllGatherEnd no copy still reads `data`, so the next
  // segment may load into it at once (ring_pieces.cc's paired segments).
  void GatherFromOut() { gather_from_out_ = true; }

 private:
  std::ostringstream& s_;
  int Flag(int f) const { return f + r_.flag_base; }
  const std::vector<int>& ring_;
  int n_, p_;
  uint64_t c_;
  RingRegisters r_;
  bool gather_from_out_ = false;
};

}  // namespace tpusim::collectives
