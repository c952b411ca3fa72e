// Collectives of an HLO module as per-core ring programs (compiler/collectives/), on the
// flags reserved for them (asm_util.h), padded to the ring programs' granules.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/lower.h"

namespace tpusim::lowering {

struct CollectiveContext {
  std::function<uint64_t(const hlo::HloInstruction*)> address;
  std::vector<int> ring;  // every core in torus ring order
  int cores = 8;
  std::optional<uint64_t> mailbox;  // CollectiveMailbox: the entry handshake
  int mxus = 2;                     // per core: drain barriers between a collective's rounds
};

// One program per core for an all-reduce, all-gather, reduce-scatter or
// collective-permute (replica i runs on core i). Throws std::invalid_argument.
std::vector<std::string> CollectiveKernels(const hlo::HloInstruction& instr,
                                           const CollectiveContext& ctx, LoweredOp& op);

}  // namespace tpusim::lowering
