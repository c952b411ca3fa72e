// Host- and board-level activity the board model reports alongside the per-unit records
// of sim/activity.h: infeed waits, outfeed, host-to-device copies, host dispatch overhead
// and all-reduce. The profiler's Recorder accepts these through IHostSink::OnHost.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "sim/activity.h"

namespace tpusim::profiler {

// The records themselves are the simulator's (sim/activity.h).
using HostKind = sim::HostKind;
using HostRecord = sim::HostRecord;
inline constexpr int kNumHostKinds = sim::kNumHostKinds;

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
