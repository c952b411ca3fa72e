// Tracks (threads) of the Chrome trace and the writer that places events on them: each
// track gets as many lanes (extra threads) as it needs so that complete events on one
// thread never partially overlap, and every pid/tid used gets its metadata names.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/host_activity.h"
#include "profiler/recorder.h"
#include "traces/atomic_file.h"

namespace tpusim::traces {

enum class Track : int {
  kSteps = 1,
  kXlaOps,
  kMxu0,
  kMxu1,
  kMxu2,
  kMxu3,
  kVpu,
  kScalar,
  kDma,
  kIci,
  kSyncFlags,
  kCollectiveOps,  // the collective stream's (docs/isa.md, "Two instruction streams")
  kCollectiveDma,
  kCollectiveVpu,
  kCollectiveScalar,
  kInfeedWait = 20,
  kOutfeed,
  kHostToDevice,
  kHostOverhead,
};

// The track of a unit of the main stream (0) or of the collective stream (1).
Track UnitTrack(isa::Unit u, int stream = 0);
Track HostTrack(profiler::HostKind k);
std::string TrackName(Track t);

class TraceWriter {
 public:
  // Opens the JSON object; times are rebased to `origin` (femtoseconds).
  TraceWriter(AtomicFile& out, int num_cores, profiler::TimeFs origin);

  int host_pid() const { return num_cores_; }
  profiler::TimeFs origin() const { return origin_; }

  // A complete event (ph "X"); args must be a JSON object or empty.
  void Complete(int pid, Track track, std::string_view name, profiler::TimeFs start,
                profiler::TimeFs end, std::string_view args);
  void Counter(int pid, std::string_view name, profiler::TimeFs t, double value);
  // Writes process/thread metadata and closes the JSON object.
  void Finish(int mxus_per_core, bool truncated, uint64_t dropped);

 private:
  void Begin();
  std::string Ts(profiler::TimeFs t) const;
  void Meta(int pid, int tid, std::string_view what, std::string_view key, std::string_view value);

  AtomicFile& out_;
  int num_cores_;
  profiler::TimeFs origin_;
  bool first_ = true;
  std::string line_;
  std::map<std::pair<int, int>, std::vector<profiler::TimeFs>> lanes_;  // (pid, track)
  std::set<std::pair<int, int>> used_;                                  // (pid, tid)
};

}  // namespace tpusim::traces
