// Estimated ring collective times; see ring_estimates.h.
#include "compiler/collectives/ring_estimates.h"

#include <cmath>

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/collectives/ring_collectives.h"

namespace tpusim::collectives {

double RingAllReduceSeconds(double bytes, const RingCostModel& m) {
  if (!m.known()) return 0;
  const double n = m.cores;
  const double pairs = std::ceil(bytes / static_cast<double>(2 * kRingSegmentBytes));
  return 2 * bytes / m.hbm_bytes_per_s + 2 * (n - 1) / n * bytes / (2 * m.link_bytes_per_s) +
         pairs * 2 * (n - 1) * m.hop_seconds;
}

double RingAllGatherSeconds(double result_bytes, const RingCostModel& m) {
  if (!m.known()) return 0;
  const double n = m.cores;
  const double rounds = std::ceil(result_bytes / static_cast<double>(kRingCollectiveMaxBytes));
  return (result_bytes / n + result_bytes) / m.hbm_bytes_per_s +
         (n - 1) / n * result_bytes / m.link_bytes_per_s + rounds * (n - 1) * m.hop_seconds;
}

double RingReduceScatterSeconds(double input_bytes, const RingCostModel& m) {
  if (!m.known()) return 0;
  const double n = m.cores;
  const double rounds = std::ceil(input_bytes / static_cast<double>(kRingCollectiveMaxBytes));
  return (input_bytes + input_bytes / n) / m.hbm_bytes_per_s +
         (n - 1) / n * input_bytes / m.link_bytes_per_s + rounds * (n - 1) * m.hop_seconds;
}

}  // namespace tpusim::collectives
