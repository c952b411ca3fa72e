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
#include "sim/unit.h"

namespace tpusim::sim {

class DmaUnit : public Unit {
 public:
  DmaUnit(sc_core::sc_module_name name, CoreContext& ctx);
  std::vector<std::unique_ptr<DmaEngine>>& engines() { return engines_; }
  CoreContext& ctx() { return ctx_; }
  // Copy number `seq` (in issue order) ended at `end`.
  void EngineDone(uint64_t seq, TimeFs end);
  DmaEndpoints Resolve(const Issued& it);

 protected:
  TimeFs Execute(const Issued& it, TimeFs earliest) override;
  uint64_t WorkIssued() const override { return copies_.started(); }
  bool WorkDoneUpTo(uint64_t n) const override { return copies_.first_unfinished() >= n; }

 private:
  void CheckRange(const Issued& it, int core, Space space, int64_t base, bool is_src);
  std::vector<std::unique_ptr<DmaEngine>> engines_;
  WaitableEvent engine_free_;
  CompletionTracker copies_;  // copies by number in issue order
};

}  // namespace tpusim::sim
