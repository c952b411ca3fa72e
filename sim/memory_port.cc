#include "sim/memory_port.h"

#include <algorithm>

#include "sim/address_map.h"

namespace tpusim::sim {

uint64_t BandwidthChannel::Reserve(uint64_t now_fs, uint64_t arrive_fs, uint64_t bytes) {
  while (!busy_.empty() && busy_.begin()->second <= now_fs) busy_.erase(busy_.begin());
  const uint64_t length = static_cast<uint64_t>(DurationFs(bytes) + 0.5);
  bytes_served_ += bytes;
  uint64_t start = arrive_fs;
  auto it = busy_.upper_bound(start);
  if (it != busy_.begin() && std::prev(it)->second > start) start = std::prev(it)->second;
  while (it != busy_.end() && it->first < start + length) {  // gap too short: skip interval
    start = std::max(start, it->second);
    ++it;
  }
  uint64_t end = start + length;
  // Insert [start, end), merging with touching neighbours.
  auto next = busy_.lower_bound(start);
  if (next != busy_.end() && next->first == end) {
    end = next->second;
    next = busy_.erase(next);
  }
  if (next != busy_.begin() && std::prev(next)->second == start) {
    std::prev(next)->second = end;
  } else {
    busy_.emplace(start, end);
  }
  return start + length;
}

MemoryPort::MemoryPort(sc_core::sc_module_name name, Memory& memory, double bytes_per_s,
                       bool functional)
    : sc_module(name),
      socket("socket"),
      memory_(memory),
      channel_(bytes_per_s),
      functional_(functional) {
  socket.register_b_transport(this, &MemoryPort::b_transport);
}

void MemoryPort::b_transport(int /*from*/, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  uint64_t offset = AddrOffset(gp.get_address());
  uint64_t n = gp.get_data_length();
  // Timing-only transactions (no data) may span a whole strided chunk; the DMA unit
  // checked every byte of the copy when it issued it.
  if (gp.get_data_ptr() && !memory_.Contains(offset, n)) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  uint64_t now = sc_core::sc_time_stamp().value();
  uint64_t done = channel_.Reserve(now, now + delay.value(), n);
  delay = sc_core::sc_time::from_value(done - now);
  if (functional_ && gp.get_data_ptr()) {
    if (gp.is_read())
      memory_.Read(offset, gp.get_data_ptr(), n);
    else
      memory_.Write(offset, gp.get_data_ptr(), n);
  }
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tpusim::sim
