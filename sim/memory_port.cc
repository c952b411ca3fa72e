#include "sim/memory_port.h"

#include <algorithm>

#include "sim/address_map.h"

namespace tpusim::sim {

uint64_t BandwidthChannel::Reserve(uint64_t arrive_fs, uint64_t bytes) {
  double begin = std::max(static_cast<double>(arrive_fs), free_at_fs_);
  free_at_fs_ = begin + static_cast<double>(bytes) * fs_per_byte_;
  bytes_served_ += bytes;
  return static_cast<uint64_t>(free_at_fs_ + 0.5);
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
  uint64_t done = channel_.Reserve(now + delay.value(), n);
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
