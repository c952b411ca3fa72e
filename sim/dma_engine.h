// One DMA engine: moves a copy in chunks of `dma_chunk_bytes` as TLM-2.0 transactions
// through the router; memory ports annotate each chunk's delay. The next chunk goes once
// this one has left the engine's side, so engines and cores sharing a path interleave
// chunk by chunk. The engine is an SC_METHOD that resumes itself at those times (a timed
// trigger, no thread of its own): the copy's state lives in `Job`.
#pragma once

#include <cstdint>
#include <systemc>
#include <tlm>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>

#include "sim/address_map.h"
#include "sim/core_context.h"
#include "sim/path_latency.h"

namespace tpusim::sim {

class BandwidthChannel;
class DmaUnit;

// Where a copy reads and writes: cores, spaces and byte offsets.
struct DmaEndpoints {
  int src_core, dst_core;
  Space src_space, dst_space;
  int64_t src, dst;
};

class DmaEngine : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(DmaEngine);
  tlm_utils::simple_initiator_socket<DmaEngine> socket;
  DmaEngine(sc_core::sc_module_name name, DmaUnit& unit);
  ~DmaEngine() override;

  bool busy() const { return busy_; }
  // Takes copy number `seq` (in the issuing unit's order); it starts now, in the next
  // delta cycle, and reports its end to `issuer` (this engine's unit or the other stream's).
  void Start(const Issued& it, uint64_t seq, DmaUnit& issuer);

 private:
  // The copy in flight: where its walk over the descriptor stands and its times.
  struct Job {
    Issued it;
    const isa::DmaDesc* desc = nullptr;
    DmaEndpoints ends{};
    uint64_t seq = 0;
    DmaUnit* issuer = nullptr;
    TimeFs start = 0, arrive = 0;
    TimeFs chunk_left = 0, all_done = 0;  // the latest chunk has left; everything arrived
    uint64_t moved = 0;                   // bytes reserved so far
    uint32_t plane = 0, row = 0;          // with values: the next piece's row
    uint64_t byte = 0;                    //   and byte in it
    bool finishing = false;               // every chunk sent; waiting for all_done
    // Timing-only copies within the core: the channels chunks reserve directly.
    BandwidthChannel *direct_src = nullptr, *direct_dst = nullptr;
  };
  // The method: starts or resumes the copy and runs it until it must wait.
  void Step();
  void Begin();
  // Sends the next chunk; returns whether bytes remain after it.
  bool SendChunk();
  void Finish();
  // Moves one piece `src` -> `dst` (offsets in the endpoints' spaces), arriving no sooner
  // than the copy's first byte can; folds its times into the job.
  void Move(int64_t src, int64_t dst, uint64_t n);

  DmaUnit& unit_;
  bool busy_ = false;
  Job job_;
  sc_core::sc_event start_;
  std::vector<uint8_t> buffer_;
  // The transaction every chunk reuses (fields set afresh per chunk), with its latency
  // extension attached for the engine's lifetime.
  tlm::tlm_generic_payload gp_;
  PathLatency latency_;
};

}  // namespace tpusim::sim
