// The DMA unit: takes copies in order from its queue and runs up to `dma_engines` of
// them at once. Each engine moves its copy in chunks of `dma_chunk_bytes` as TLM-2.0
// transactions through the router; memory ports annotate each chunk's delay, and the
// engine waits once per chunk. Completion adds 1 to the copy's sync flag.
#pragma once

#include <memory>
#include <systemc>
#include <tlm>
#include <vector>

#include "sim/address_map.h"
#include "sim/completion_tracker.h"
#include "sim/dma_engine.h"
#include "sim/memory_port.h"
#include "sim/unit.h"

namespace tpusim::sim {

class DmaUnit : public Unit {
 public:
  // The main stream's unit owns the core's engines; the collective stream's (stream 1)
  // takes them in turn with it: `engines_of` is the unit whose engines it uses.
  DmaUnit(sc_core::sc_module_name name, CoreContext& ctx, int stream = 0,
          DmaUnit* engines_of = nullptr);
  std::vector<std::unique_ptr<DmaEngine>>& engines() { return engines_; }
  CoreContext& ctx() { return ctx_; }
  // Copy number `seq` (in this unit's issue order) ended at `end`.
  void EngineDone(uint64_t seq, TimeFs end);
  DmaEndpoints Resolve(const Issued& it);
  // This core's memory ports' channels by space, for timing-only copies that stay on the
  // core: the engine reserves them directly (what the router and port would do, as TLM's
  // DMI bypasses an interconnect) instead of sending each chunk through the sockets.
  void SetLocalChannels(BandwidthChannel* hbm, BandwidthChannel* vmem, BandwidthChannel* smem) {
    local_channels_[0] = hbm, local_channels_[1] = vmem, local_channels_[2] = smem;
  }
  BandwidthChannel* LocalChannel(Space s) const { return local_channels_[static_cast<int>(s)]; }

 protected:
  TimeFs Execute(const Issued& it, TimeFs earliest) override;
  uint64_t WorkIssued() const override { return copies_.started(); }
  bool WorkDoneUpTo(uint64_t n) const override { return copies_.first_unfinished() >= n; }

 private:
  void CheckRange(const Issued& it, int core, Space space, int64_t base, bool is_src);
  std::vector<std::unique_ptr<DmaEngine>> engines_;  // empty unless this unit owns them
  DmaUnit* pool_;                                    // the unit that owns the engines used
  BandwidthChannel* local_channels_[kNumSpaces] = {};
  WaitableEvent engine_free_;  // the owner's: an engine became free
  CompletionTracker copies_;   // copies by number in issue order
};

}  // namespace tpusim::sim
