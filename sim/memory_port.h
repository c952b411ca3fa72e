// A memory behind a TLM-2.0 target socket. Each b_transport is one DMA chunk: the port
// serves chunks first come first served at its bandwidth and annotates the delay until
// the chunk is done (loosely timed; no wait() inside).
#pragma once

#include <cstddef>
#include <cstdint>
#include <systemc>
#include <tlm>
#include <utility>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>

#include "sim/memory.h"

namespace tpusim::sim {

// Bandwidth reservation on one path, as a calendar of busy intervals: a transfer takes
// the earliest gap at or after its arrival long enough to hold it. Transfers may be
// reserved out of time order (a chunk annotated into the future does not block one that
// arrives sooner). Intervals that ended before `now` are dropped. The calendar is a sorted
// vector whose dropped prefix is skipped and compacted in bulk: reservations land at or
// near its end, so appending and dropping cost amortised O(1) and no allocation.
class BandwidthChannel {
 public:
  explicit BandwidthChannel(double bytes_per_s) : fs_per_byte_(1e15 / bytes_per_s) {}
  // Reserves `bytes` starting no earlier than `arrive_fs` (>= now_fs); returns the finish.
  uint64_t Reserve(uint64_t now_fs, uint64_t arrive_fs, uint64_t bytes);
  uint64_t bytes_served() const { return bytes_served_; }
  double DurationFs(uint64_t bytes) const { return static_cast<double>(bytes) * fs_per_byte_; }

 private:
  using Interval = std::pair<uint64_t, uint64_t>;  // [start, end)
  // Forgets the intervals that ended at or before now_fs.
  void DropBefore(uint64_t now_fs);

  double fs_per_byte_;
  // busy_[head_..]: disjoint by start, touching ones merged; busy_[..head_) are dropped.
  std::vector<Interval> busy_;
  size_t head_ = 0;
  uint64_t bytes_served_ = 0;
};

class MemoryPort : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<MemoryPort> socket;  // one binding per router

  MemoryPort(sc_core::sc_module_name name, Memory& memory, double bytes_per_s, bool functional);
  Memory& memory() { return memory_; }
  const BandwidthChannel& channel() const { return channel_; }
  BandwidthChannel& channel() { return channel_; }

 private:
  void b_transport(int from, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);

  Memory& memory_;
  BandwidthChannel channel_;
  bool functional_;
};

}  // namespace tpusim::sim
