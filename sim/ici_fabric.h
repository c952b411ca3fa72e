// The board's interconnect: chips in a 2D torus joined by ICI links, and the on-chip path
// between the two cores of a chip. DMA chunks to another core's memory arrive here from
// that core's router (TLM-2.0 b_transport); each directed link is a FIFO bandwidth
// channel, hops add latency, and the chunk streams through its hops (cut-through).
#pragma once

#include <map>
#include <systemc>
#include <tlm>
#include <vector>

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "sim/config.h"
#include "sim/memory_port.h"

namespace tpusim::sim {

class IciFabric : public sc_core::sc_module {
 public:
  // in[c] is bound by core c's router; out[2c + space] to core c's memory ports.
  tlm_utils::multi_passthrough_target_socket<IciFabric> in;
  tlm_utils::multi_passthrough_initiator_socket<IciFabric> out;

  IciFabric(sc_core::sc_module_name name, const BoardConfig& board);

  struct Hop {
    int from, to;  // chips for ICI hops; cores for the on-chip hop
    bool onchip;
  };
  // The hops data takes from core `src` to core `dst`: dimension order, x then y, each
  // the shorter way round the torus.
  std::vector<Hop> Route(int src, int dst) const;
  // Bytes each directed link has carried (link key: from/to/onchip).
  uint64_t BytesOn(const Hop& h) const;

 private:
  void b_transport(int from, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  BandwidthChannel& Channel(const Hop& h);

  const BoardConfig& board_;
  std::map<std::tuple<int, int, bool>, BandwidthChannel> links_;
};

}  // namespace tpusim::sim
