#include "sim/ici_fabric.h"

#include <algorithm>

#include "sim/address_map.h"
#include "sim/path_latency.h"
#include "sim/timing.h"

namespace tpusim::sim {

IciFabric::IciFabric(sc_core::sc_module_name name, const BoardConfig& board)
    : sc_module(name), in("in"), out("out"), board_(board) {
  in.register_b_transport(this, &IciFabric::b_transport);
}

std::vector<IciFabric::Hop> IciFabric::Route(int src, int dst) const {
  const int per_chip = board_.cores_per_chip, tx = board_.ici.torus_x, ty = board_.ici.torus_y;
  int a = src / per_chip, b = dst / per_chip;
  if (a == b) return {Hop{src, dst, true}};
  std::vector<Hop> hops;
  auto step = [](int from, int to, int n) {  // one step the shorter way round a ring of n
    int fwd = (to - from + n) % n;
    return fwd <= n - fwd ? (from + 1) % n : (from - 1 + n) % n;
  };
  int x = a % tx, y = a / tx;
  const int bx = b % tx, by = b / tx;
  while (x != bx) {
    int nx = step(x, bx, tx);
    hops.push_back({y * tx + x, y * tx + nx, false});
    x = nx;
  }
  while (y != by) {
    int ny = step(y, by, ty);
    hops.push_back({y * tx + x, ny * tx + x, false});
    y = ny;
  }
  return hops;
}

BandwidthChannel& IciFabric::Channel(const Hop& h) {
  auto key = std::make_tuple(h.from, h.to, h.onchip);
  auto it = links_.find(key);
  if (it == links_.end()) {
    double bw = h.onchip ? board_.ici.onchip_bandwidth_bytes_per_s
                         : board_.ici.links_per_neighbor * board_.ici.link_bandwidth_bytes_per_s;
    it = links_.emplace(key, BandwidthChannel(bw)).first;
  }
  return it->second;
}

uint64_t IciFabric::BytesOn(const Hop& h) const {
  auto it = links_.find(std::make_tuple(h.from, h.to, h.onchip));
  return it == links_.end() ? 0 : it->second.bytes_served();
}

void IciFabric::b_transport(int from, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  const int target = AddrCore(gp.get_address());
  if (target >= board_.cores() || from >= board_.cores()) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  // Data flows to the requester on a read and from it on a write.
  int src = gp.is_read() ? target : from, dst = gp.is_read() ? from : target;
  const uint64_t n = gp.get_data_length();
  const uint64_t now = sc_core::sc_time_stamp().value();
  uint64_t head = now + delay.value(), done = head;  // head: when the first byte reaches a hop
  uint64_t latency = 0;
  for (const Hop& h : Route(src, dst)) {
    int lat = h.onchip ? board_.ici.onchip_latency_cycles : board_.ici.latency_cycles;
    head += CyclesToFs(board_.core, lat);
    latency += CyclesToFs(board_.core, lat);
    BandwidthChannel& ch = Channel(h);
    uint64_t finish = ch.Reserve(now, head, n);
    head = finish - static_cast<uint64_t>(ch.DurationFs(n));
    done = std::max(done, finish);
  }
  sc_core::sc_time port_delay = sc_core::sc_time::from_value(head - now);
  out[2 * target + static_cast<int>(AddrSpace(gp.get_address()))]->b_transport(gp, port_delay);
  delay = sc_core::sc_time::from_value(std::max<uint64_t>(done, now + port_delay.value()) - now);
  if (PathLatency* ext = gp.get_extension<PathLatency>()) ext->fs += latency;
}

}  // namespace tpusim::sim
