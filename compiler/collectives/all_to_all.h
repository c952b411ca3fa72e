// all-to-all over ICI: each core sends one chunk to every member of its group (its own
// included) with dma.g, straight into the member's result at the slot of the sender, and
// waits until every member's chunk has landed in its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/collectives/ring_emitter.h"

namespace tpusim::collectives {

struct ChunkSend {
  int target = 0;       // core
  uint64_t source = 0;  // this core's HBM address of the chunk
  uint64_t dest = 0;    // the target's HBM address it lands at
};

// One core's program: `sends` (all of `chunk_bytes`), then a wait for `incoming` chunks;
// with a mailbox, the entry barrier first. Throws std::invalid_argument for chunks that are
// not whole 4-byte words.
std::string AllToAllProgram(const std::vector<ChunkSend>& sends, uint64_t chunk_bytes, int incoming,
                            int core, const std::string& tag, int flag_base,
                            std::optional<Mailbox> mailbox);

}  // namespace tpusim::collectives
