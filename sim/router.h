// Routes DMA chunks (TLM-2.0 b_transport) by global address to the memory port of the
// addressed core and space. Built once, then connected: AddRoute per reachable port.
#pragma once

#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "sim/address_map.h"

namespace tpusim::sim {

class Router : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Router> in;      // DMA engines
  tlm_utils::multi_passthrough_initiator_socket<Router> out;  // memory ports

  explicit Router(sc_core::sc_module_name name);
  // Declares that out[out_index] reaches (core, space). Bind `out` in the same order.
  void AddRoute(int core, Space space, int out_index);
  // Where every address without its own route goes (the board's ICI fabric); -1: none.
  void SetDefaultRoute(int out_index) { default_route_ = out_index; }

 private:
  void b_transport(int from, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  // out index per (core, space), at core * kNumSpaces + space; -1: the default route.
  std::vector<int> routes_;
  int default_route_ = -1;
};

}  // namespace tpusim::sim
