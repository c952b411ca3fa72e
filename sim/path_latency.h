// A TLM-2.0 extension on DMA chunks: the fixed latency (femtoseconds) included in the
// delay a target annotated, such as ICI hop latency. The engine streams the next chunk
// as soon as this one has left (delay - latency), so latency is paid once per copy.
#pragma once

#include <cstdint>
#include <tlm>

namespace tpusim::sim {

struct PathLatency : tlm::tlm_extension<PathLatency> {
  uint64_t fs = 0;
  tlm::tlm_extension_base* clone() const override { return new PathLatency(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    fs = static_cast<const PathLatency&>(other).fs;
  }
};

}  // namespace tpusim::sim
