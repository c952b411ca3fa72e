// Host- and board-level activity the board model reports alongside the per-unit records
// of sim/activity.h: infeed waits, outfeed, host-to-device copies, host dispatch overhead
// and all-reduce. The profiler's Recorder accepts these through IHostSink::OnHost.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "sim/activity.h"

namespace tpusim::profiler {

enum class HostKind : uint8_t {
  kInfeedWait,    // the core idles waiting for the next input batch
  kOutfeed,       // the core sends results to the host
  kHostToDevice,  // host-to-device transfer (weights, non-infeed inputs)
  kHostOverhead,  // host dispatch / launch overhead between executions
  kAllReduce,     // cross-replica reduction (compute and synchronisation)
};
inline constexpr int kNumHostKinds = 5;

// Time the core spent in one host-level activity during a step.
struct HostRecord {
  uint16_t core = 0;
  HostKind kind = HostKind::kInfeedWait;
  sim::TimeFs start = 0;
  sim::TimeFs end = 0;
  uint32_t step = 0;
};

class IHostSink {
 public:
  virtual ~IHostSink() = default;
  virtual void OnHost(const HostRecord& r) = 0;
};

// "infeed_wait", "outfeed", "host_to_device", "host_overhead", "all_reduce".
inline std::string_view HostKindName(HostKind k) {
  static constexpr std::array<std::string_view, kNumHostKinds> kNames = {
      "infeed_wait", "outfeed", "host_to_device", "host_overhead", "all_reduce"};
  return kNames[static_cast<int>(k)];
}

}  // namespace tpusim::profiler
