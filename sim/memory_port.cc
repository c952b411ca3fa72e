#include "sim/memory_port.h"

#include <algorithm>

#include "sim/address_map.h"

namespace tpusim::sim {

void BandwidthChannel::DropBefore(uint64_t now_fs) {
  while (head_ < busy_.size() && busy_[head_].second <= now_fs) ++head_;
  if (head_ == busy_.size()) {
    busy_.clear(), head_ = 0;
  } else if (head_ >= 64 && 2 * head_ >= busy_.size()) {
    busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

uint64_t BandwidthChannel::Reserve(uint64_t now_fs, uint64_t arrive_fs, uint64_t bytes) {
  DropBefore(now_fs);
  const uint64_t length = static_cast<uint64_t>(DurationFs(bytes) + 0.5);
  bytes_served_ += bytes;
  uint64_t start = arrive_fs;
  // i: the first interval starting after `start`; the one before it may still cover it.
  size_t i = static_cast<size_t>(
      std::upper_bound(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.end(), start,
                       [](uint64_t t, const Interval& iv) { return t < iv.first; }) -
      busy_.begin());
  if (i > head_ && busy_[i - 1].second > start) start = busy_[i - 1].second;
  while (i < busy_.size() && busy_[i].first < start + length) {  // gap too short: skip it
    start = std::max(start, busy_[i].second);
    ++i;
  }
  if (length == 0) return start;  // nothing to hold
  // Every interval before i now starts before `start`: insert [start, end) at i, merging
  // with touching neighbours.
  uint64_t end = start + length;
  const auto at = busy_.begin() + static_cast<std::ptrdiff_t>(i);
  if (i < busy_.size() && busy_[i].first == end) {
    end = busy_[i].second;
    if (i > head_ && busy_[i - 1].second == start) {  // fills the gap: join both
      busy_[i - 1].second = end;
      busy_.erase(at);
    } else {
      busy_[i].first = start;
    }
  } else if (i > head_ && busy_[i - 1].second == start) {
    busy_[i - 1].second = end;
  } else {
    busy_.insert(at, Interval(start, end));
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
  uint64_t now = sc_core::sc_get_curr_simcontext()->time_stamp().value();
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
