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
  uint64_t left = static_cast<uint64_t>(DurationFs(bytes) + 0.5);
  bytes_served_ += bytes;
  uint64_t start = arrive_fs;
  // i: the first interval starting after `start`; the one before it may still cover it.
  size_t i = static_cast<size_t>(
      std::upper_bound(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.end(), start,
                       [](uint64_t t, const Interval& iv) { return t < iv.first; }) -
      busy_.begin());
  if (i > head_ && busy_[i - 1].second > start) start = busy_[i - 1].second;
  if (left == 0) return start;  // nothing to hold
  // Fill gaps from `start` on until the transfer is held; intervals stay merged, so each
  // gap before busy_[i] is non-empty.
  for (;;) {
    const bool more = i < busy_.size();
    const uint64_t take = more ? std::min(left, busy_[i].first - start) : left;
    const uint64_t end = start + take;
    left -= take;
    const bool join_prev = i > head_ && busy_[i - 1].second == start;
    const bool join_next = more && busy_[i].first == end;
    const auto at = busy_.begin() + static_cast<std::ptrdiff_t>(i);
    if (join_prev && join_next) {
      busy_[i - 1].second = busy_[i].second;
      busy_.erase(at);
      start = busy_[i - 1].second;
    } else if (join_next) {
      busy_[i].first = start;
      start = busy_[i].second;
      ++i;
    } else if (join_prev) {
      busy_[i - 1].second = end;
    } else {
      busy_.insert(at, Interval(start, end));
    }
    if (left == 0) return end;
  }
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
