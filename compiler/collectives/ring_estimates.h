// Estimated times of the ring collectives (docs/collectives.md, timing model), for the
// scheduler that overlaps them with kernels (passes/async_collectives.h) and the lowering
// that decides which kernels run beside them (lowering/driver/collective_stream.cc).
#pragma once

#include <cstdint>

namespace tpusim::collectives {

// The board as the estimates see it (lowering::LowerOptions fills it from the config);
// zeros: no estimate.
struct RingCostModel {
  int cores = 8;                // members of each ring
  double peak_flops_per_s = 0;  // per core
  double hbm_bytes_per_s = 0;   // per core
  double link_bytes_per_s = 0;  // one ICI link, one direction
  double hop_seconds = 0;       // a ring step's start-up: DMA latency and one hop's
  bool known() const { return peak_flops_per_s > 0 && hbm_bytes_per_s > 0 && link_bytes_per_s > 0; }
};

// A ring all-reduce of `bytes` per core: the array loaded and stored, 2(n-1)/n of it over
// the links both ways round the ring, and 2(n-1) step start-ups per pair of 2 MiB segments.
double RingAllReduceSeconds(double bytes, const RingCostModel& m);

// A ring all-gather of `result_bytes` per core: the part loaded and the result stored,
// (n-1)/n of the result over one link, and n-1 step start-ups per round of at most
// kRingCollectiveMaxBytes.
double RingAllGatherSeconds(double result_bytes, const RingCostModel& m);

// A ring reduce-scatter of `input_bytes` per core: the input loaded and a part stored,
// (n-1)/n of the input over one link, and n-1 step start-ups per round of at most
// kRingCollectiveMaxBytes.
double RingReduceScatterSeconds(double input_bytes, const RingCostModel& m);

}  // namespace tpusim::collectives
