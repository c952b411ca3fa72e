// Collectives as ISA programs: a ring all-reduce (sum or max) of an f32 array held in
// every participant's HBM, built from dma.g copies over ICI and sync flags. Each core
// runs its own program; together they leave the reduced array in every core's HBM.
// Algorithm and timing model: docs/collectives.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/collectives/ring_emitter.h"

namespace tpusim::collectives {

// Arrays above kRingSingleSegmentBytes are reduced kRingSegmentBytes at a time, two segments
// at once, one round the ring each way, in VMEM buffer sets kRingSetBytes apart
// (ring_pieces.cc).
inline constexpr uint64_t kRingVregBytes = 4096;
inline constexpr uint64_t kRingSegmentBytes = 2 << 20;
inline constexpr uint64_t kRingSingleSegmentBytes = 4 << 20;
inline constexpr uint64_t kRingSetBytes = 6 << 20;
// From this size a one-segment all-reduce goes as two halves, one round the ring each way,
// when each half is whole vector registers per core (below it the latencies dominate).
inline constexpr uint64_t kRingHalvesMinBytes = 1 << 20;
inline bool GoesAsHalves(uint64_t bytes, int ring_size) {
  return bytes >= kRingHalvesMinBytes && bytes <= kRingSingleSegmentBytes &&
         bytes % (2 * kRingVregBytes * static_cast<uint64_t>(ring_size)) == 0;
}

// One operand of a combined (tuple) all-reduce: its buffer and where its result goes
// (none: reduced with the others but not stored).
struct RingPiece {
  uint64_t input = 0, bytes = 0;
  std::optional<uint64_t> output;
};

struct RingAllReduceSpec {
  std::vector<int> ring;     // participating cores, in ring order (data flows i -> i+1)
  uint64_t hbm_address = 0;  // the f32 array, same address on every core
  uint64_t bytes = 0;        // multiple of 4096 x ring size (of 2 MiB above 4 MiB)
  ReduceOp op = ReduceOp::kSum;
  // Half the array goes round the ring each way, using both directions of every link
  // (arrays up to 4 MiB, multiples of 8192 x ring size).
  bool bidirectional = false;
  // Unidirectional only: the array's real size when `bytes` pads it (one segment); the
  // padding is reduced in VMEM but never read from or written to HBM (0: no padding).
  uint64_t valid_bytes = 0;
  std::optional<uint64_t> hbm_output;  // where the result goes (default: hbm_address)
  // Unidirectional only: when set, the array is these buffers back to back (hbm_address,
  // hbm_output and valid_bytes unused) and `bytes` pads their sum; the padding stays in VMEM.
  std::vector<RingPiece> pieces;
  std::string tag = "all-reduce";  // provenance tag of the emitted instructions
  int flag_base = 0;  // the program uses flags flag_base.. (+8 more when bidirectional)
  // Where its VMEM buffers start (12 MiB from there at most: two buffer sets kRingSetBytes
  // apart): offset 0, or for an asynchronous all-reduce the collective stream's region
  // (kAsyncRingVmemBase).
  uint64_t vmem_base = 0;
  // Inside a compiled program: the mailbox of the entry barrier or handshake (EmitEntry).
  // Unset for a program that starts on idle cores.
  std::optional<Mailbox> mailbox;
};

// The collective stream's asynchronous all-reduces (docs/collectives.md, "The collective
// stream") run beside compute kernels, which plan VMEM from offset 0: a ring's buffers take
// the top 12 MiB of the core's 16 MiB (sim/configs vmem_bytes, TPU v2 and v3), its two
// buffer sets of 2 MiB segments, and a kernel runs beside it only when it plans for the
// 4 MiB below kAsyncRingVmemBase. Smaller segments would leave the kernels more room but
// slow the ring: 1 MiB segments (6 MiB) took JAX's MNIST CNN's 151 MB gradient all-reduce
// from 1.96 to 2.81 ms, more than its overlap gained (7.58 -> 7.53 ms per step, against 7.29
// with these).
inline constexpr uint64_t kCoreVmemBytes = uint64_t{16} << 20;
inline constexpr uint64_t kAsyncRingVmemBase = kCoreVmemBytes - 2 * kRingSetBytes;

// The assembly of the program of ring position `position`. Throws std::invalid_argument
// on a spec it cannot serve (sizes, ring).
std::string RingAllReduceProgram(const RingAllReduceSpec& spec, int position);

// The program when spec.pieces is set (ring_pieces.cc): the segments are unrolled, each
// gathering its parts of the pieces from HBM and scattering its results back.
std::string RingAllReducePiecesProgram(const RingAllReduceSpec& spec, int position);

// The cores of a torus_x x torus_y board with `cores_per_chip` cores per chip, in an
// order where every step is one on-chip or one chip-to-chip hop (a snake over the torus).
std::vector<int> TorusRing(int torus_x, int torus_y, int cores_per_chip);

}  // namespace tpusim::collectives
