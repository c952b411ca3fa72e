// Reduce-scatter, all-gather and collective-permute as ISA programs, for any replica
// groups, with XLA's semantics (openxla operation_semantics): in a group of n cores,
// reduce-scatter leaves on the member at group index g the reduced g-th of n equal parts;
// all-gather concatenates the members' inputs in group order. Each group runs its own
// ring over its members, ordered along the board's torus ring.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/collectives/ring_emitter.h"

namespace tpusim::collectives {

struct RingCollectiveSpec {
  std::vector<std::vector<int>> replica_groups;  // core ids; empty = one group of all
  std::vector<int> board_ring;                   // every core in torus ring order (TorusRing)
  uint64_t input_address = 0;                    // HBM, same on every core
  uint64_t output_address = 0;                   // HBM, same on every core
  uint64_t input_bytes = 0;  // per core; all-gather: one part; reduce-scatter: n parts
  // All-gather along a dimension after the leading ones: the part is `part_rows` rows (the
  // product of the dimensions before the gathered one) and the output interleaves them, row
  // r of member g at output + (r n + g) x row bytes. Reduce-scatter likewise: part g's row r
  // is at input + (r n + g) x row bytes, and the reduced part goes out as its rows in order.
  // 1: the parts are contiguous.
  uint64_t part_rows = 1;
  // All-gather: where member g's rows start in the output, output + g x member_stride (0: one
  // row, as above); reduce-scatter: where part g starts in the input (0: one part). A round
  // of a larger collective moves a piece of each part (lowering/collective/collective_emitters.cc).
  uint64_t member_stride = 0;
  ReduceOp op = ReduceOp::kSum;
  std::string tag;
  int flag_base = 0;               // the programs use flags flag_base..flag_base+5
  uint64_t vmem_base = 0;          // VMEM they stage from (at most 2 x kRingCollectiveMaxBytes)
  std::optional<Mailbox> mailbox;  // the entry barrier's mailbox (RingAllReduceSpec)
};

// The program of `core`. Throws std::invalid_argument when the core is in no group, the
// groups overlap, or sizes are not whole parts (reduce-scatter: multiples of 4096 bytes, the
// VPU folds whole vregs; all-gather, which only copies: rows of a multiple of 4 bytes), or
// exceed 4 MiB (kRingCollectiveMaxBytes: the ring stages the gathered data in VMEM).
inline constexpr uint64_t kRingCollectiveMaxBytes = 4 << 20;
std::string ReduceScatterProgram(const RingCollectiveSpec& spec, int core);
std::string AllGatherProgram(const RingCollectiveSpec& spec, int core);

// collective-permute: core `source` copies its input to `target`'s output, for every
// (source, target) pair; a core that is nobody's target gets zeros, as in XLA.
std::string CollectivePermuteProgram(const std::vector<std::pair<int, int>>& pairs,
                                     uint64_t input_address, uint64_t output_address,
                                     uint64_t bytes, int core, const std::string& tag = "",
                                     int flag_base = 0,
                                     std::optional<Mailbox> mailbox = std::nullopt);

// The members of the group holding `core`, in board-ring order, and core's position.
std::pair<std::vector<int>, int> GroupRing(const RingCollectiveSpec& spec, int core);

}  // namespace tpusim::collectives
