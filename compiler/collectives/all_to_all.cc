// all-to-all programs; see all_to_all.h.
#include "compiler/collectives/all_to_all.h"

#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"
#include "compiler/collectives/ring_emitter.h"

namespace tpusim::collectives {

std::string AllToAllProgram(const std::vector<ChunkSend>& sends, uint64_t chunk_bytes, int incoming,
                            int core, const std::string& tag, int fb,
                            std::optional<Mailbox> mailbox) {
  if (chunk_bytes == 0 || chunk_bytes % 4) {
    throw std::invalid_argument("all-to-all chunks must be whole 4-byte words");
  }
  std::ostringstream s;
  s << "# all-to-all\n.desc chunk rows=1 row_bytes=" << chunk_bytes
    << " src_stride=0 dst_stride=0\n.tag \"" << tag << "\"\n";
  if (mailbox) EmitEntryBarrier(s, core, *mailbox);
  for (const ChunkSend& c : sends) {
    s << "    li r1, " << c.target << "\n    shli r1, r1, 56\n"
      << assembly::LoadAddress(2, c.dest, 5) << "    or r1, r1, r2\n    li r3, " << core
      << "\n    shli r3, r3, 56\n"
      << assembly::LoadAddress(4, c.source, 5) << "    or r3, r3, r4\n    dma.g r1, r3, chunk, f"
      << fb + kFlagGathered << "\n";
  }
  if (incoming > 0) s << "    wait seq, f" << fb + kFlagGathered << ", " << incoming << "\n";
  s << "    halt\n";
  return s.str();
}

}  // namespace tpusim::collectives
