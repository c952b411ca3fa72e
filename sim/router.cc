#include "sim/router.h"

namespace tpusim::sim {

Router::Router(sc_core::sc_module_name name) : sc_module(name), in("in"), out("out") {
  in.register_b_transport(this, &Router::b_transport);
}

void Router::AddRoute(int core, Space space, int out_index) {
  const size_t k = static_cast<size_t>(core) * kNumSpaces + static_cast<size_t>(space);
  if (routes_.size() <= k) routes_.resize(k + 1, -1);
  routes_[k] = out_index;
}

void Router::b_transport(int /*from*/, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  const uint64_t a = gp.get_address();
  const auto space = static_cast<size_t>(AddrSpace(a));
  const size_t k = static_cast<size_t>(AddrCore(a)) * kNumSpaces + space;
  const int route =
      space < kNumSpaces && k < routes_.size() && routes_[k] >= 0 ? routes_[k] : default_route_;
  if (route < 0) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  out[route]->b_transport(gp, delay);
}

}  // namespace tpusim::sim
