#include "sim/router.h"

namespace tpusim::sim {

Router::Router(sc_core::sc_module_name name) : sc_module(name), in("in"), out("out") {
  in.register_b_transport(this, &Router::b_transport);
}

void Router::AddRoute(int core, Space space, int out_index) { routes_[{core, space}] = out_index; }

void Router::b_transport(int /*from*/, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  uint64_t a = gp.get_address();
  auto it = routes_.find({AddrCore(a), AddrSpace(a)});
  int route = it != routes_.end() ? it->second : default_route_;
  if (route < 0) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  out[route]->b_transport(gp, delay);
}

}  // namespace tpusim::sim
