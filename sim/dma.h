// The DMA unit: takes copies in order from its queue and runs up to `dma_engines` of
// them at once. Each engine moves its copy in chunks of `dma_chunk_bytes` as TLM-2.0
// transactions through the router; memory ports annotate each chunk's delay, and the
// engine waits once per chunk. Completion adds 1 to the copy's sync flag.
#pragma once

#include <memory>
#include <systemc>
#include <tlm>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>

#include "sim/address_map.h"
#include "sim/completion_tracker.h"
#include "sim/path_latency.h"
#include "sim/unit.h"

namespace tpusim::sim {

class DmaUnit;

class DmaEngine : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(DmaEngine);
  tlm_utils::simple_initiator_socket<DmaEngine> socket;
  DmaEngine(sc_core::sc_module_name name, DmaUnit& unit);
  ~DmaEngine() override;

  bool busy() const { return busy_; }
  void Start(const Issued& it, uint64_t seq);

 private:
  void Run();
  void Copy(const Issued& it);
  // Moves one piece at `src` -> `dst`. done: when (absolute fs) it has fully arrived;
  // left: when it has left the engine's side (done less the path's fixed latency).
  struct Moved {
    TimeFs done, left;
  };
  Moved Transfer(const Issued& it, uint64_t src, uint64_t dst, uint64_t n, TimeFs arrive);

  DmaUnit& unit_;
  bool busy_ = false;
  Issued job_;
  uint64_t seq_ = 0;
  sc_core::sc_event start_;
  std::vector<uint8_t> buffer_;
  // The transaction every chunk reuses (fields set afresh per chunk), with its latency
  // extension attached for the engine's lifetime.
  tlm::tlm_generic_payload gp_;
  PathLatency latency_;
};

class DmaUnit : public Unit {
 public:
  DmaUnit(sc_core::sc_module_name name, CoreContext& ctx);
  std::vector<std::unique_ptr<DmaEngine>>& engines() { return engines_; }
  CoreContext& ctx() { return ctx_; }
  // Copy number `seq` (in issue order) ended at `end`.
  void EngineDone(uint64_t seq, TimeFs end);
  // Where a copy reads and writes: cores, spaces and byte offsets.
  struct Endpoints {
    int src_core, dst_core;
    Space src_space, dst_space;
    int64_t src, dst;
  };
  Endpoints Resolve(const Issued& it);

 protected:
  TimeFs Execute(const Issued& it, TimeFs earliest) override;
  uint64_t WorkIssued() const override { return copies_.started(); }
  bool WorkDoneUpTo(uint64_t n) const override { return copies_.first_unfinished() >= n; }

 private:
  void CheckRange(const Issued& it, int core, Space space, int64_t base, bool is_src);
  std::vector<std::unique_ptr<DmaEngine>> engines_;
  sc_core::sc_event engine_free_;
  CompletionTracker copies_;  // copies by number in issue order
};

}  // namespace tpusim::sim
