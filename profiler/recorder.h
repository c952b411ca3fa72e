// The profiler's activity sink. It always keeps bounded aggregates (per core and unit,
// per HLO tag, per step, per time bucket) and keeps the full event list only for steps in
// a window and up to an event cap, after which it keeps aggregates only and says so.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/busy_union.h"
#include "profiler/host_activity.h"
#include "profiler/timeline.h"
#include "sim/activity.h"

namespace tpusim::profiler {

using sim::TimeFs;
inline constexpr TimeFs kNoTime = std::numeric_limits<TimeFs>::max();

struct RecorderOptions {
  int num_cores = 8;
  int mxus_per_core = 2;
  uint32_t first_step = 0;  // event window, inclusive
  uint32_t last_step = std::numeric_limits<uint32_t>::max();
  size_t max_events = 2'000'000;                // events kept in the window
  TimeFs sample_interval_fs = 100'000'000'000;  // 100 us of simulated time
  size_t max_samples = 4096;                    // buckets before the width doubles
  size_t fold_threshold = 1 << 16;              // buffered intervals per core
  bool keep_events = true;                      // false: aggregates only (no trace will be written)
};

struct UnitAgg {
  TimeFs busy = 0;
  TimeFs wait = 0;
  uint64_t count = 0;
};

struct TagAgg {
  std::string name;
  TimeFs time = 0;  // wall time covered by the op's work, summed over cores
  double flops = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;  // instructions
  // From the first start to the last end of the op's records in each step, summed over
  // steps and cores: with the idle gaps inside (a collective waiting for its peers).
  TimeFs span = 0;
};

struct StepCoreAgg {
  TimeFs start = kNoTime;
  TimeFs end = 0;
  TimeFs busy = 0;  // union of busy intervals within [start, end)
  std::array<TimeFs, kNumHostKinds> host{};
  bool reported() const { return start != kNoTime; }
};

struct CoreAgg {
  std::array<UnitAgg, isa::kNumUnits> units{};
  std::array<TimeFs, kNumHostKinds> host{};
  TimeFs busy_union = 0;
  double flops = 0;
  uint64_t bytes = 0;
  std::map<uint32_t, StepCoreAgg> steps;  // by step number
};

// The event window. Kept in arrival order.
struct EventLog {
  std::vector<sim::BusyRecord> busy;
  std::vector<sim::WaitRecord> waits;
  std::vector<sim::StepRecord> steps;
  std::vector<HostRecord> host;
  bool truncated = false;  // the event cap was hit: aggregates only from then on
  uint64_t dropped = 0;    // in-window events not kept because of the cap
};

class Recorder : public sim::IActivitySink, public IHostSink {
 public:
  explicit Recorder(RecorderOptions options = {});

  // HLO op names of a core's program (isa::Program::tags); tags[0] is "" (untagged).
  void SetTags(int core, std::vector<std::string> tags);

  void OnBusy(const sim::BusyRecord& r) override;
  void OnWait(const sim::WaitRecord& r) override;
  void OnStep(const sim::StepRecord& r) override;
  void OnHost(const HostRecord& r) override;

  // Folds buffered busy intervals below `upto` into the aggregates (for the monitor
  // during a run). Finish() folds everything; call it once the run has ended.
  void Flush(TimeFs upto);
  void Finish();

  const RecorderOptions& options() const { return options_; }
  int num_cores() const { return options_.num_cores; }
  const CoreAgg& core(int c) const { return cores_[c]; }
  const std::vector<TagAgg>& tags() const { return tag_aggs_; }
  const EventLog& events() const { return events_; }
  const Timeline& timeline() const { return timeline_; }
  const std::string& TagName(int core, uint16_t tag) const;
  TimeFs first_time() const { return first_ == kNoTime ? 0 : first_; }
  TimeFs last_time() const { return last_; }
  uint64_t late_records() const;

 private:
  // One op's intervals on one core; folded into its TagAgg's time with the core's union.
  struct TagTime {
    int slot = -1;  // index into tag_aggs_
    BusyUnion un;
    // The open span of the op's records in step `span_step` (span_end == 0: none open).
    TimeFs span_start = 0, span_end = 0;
    uint32_t span_step = 0;
  };
  void Touch(TimeFs start, TimeFs end);
  bool KeepEvent(uint32_t step);
  // `count` contiguous records of one unit, tag, op and step, merged into `r`.
  void AddBusy(const sim::BusyRecord& r, uint64_t count);
  void DeliverMerged(int core);
  void FoldCore(int core, TimeFs limit);
  TagTime& TagTimeOf(int core, uint16_t tag) {
    std::vector<TagTime>& times = tag_times_[core];
    return tag < times.size() && times[tag].slot >= 0 ? times[tag] : NewTagTime(core, tag);
  }
  TagTime& NewTagTime(int core, uint16_t tag);  // first record of the tag on the core

  RecorderOptions options_;
  std::vector<CoreAgg> cores_;
  std::vector<BusyUnion> unions_;
  std::vector<std::map<TimeFs, uint32_t>> step_by_start_;  // per core
  std::vector<TimeFs> last_step_end_;                      // per core
  // Folded busy pieces not yet fully inside reported steps (steps are reported when they
  // end): {start, end, assigned-until}, per core, in time order.
  struct PendingBusy {
    TimeFs start, end, assigned;
  };
  std::vector<std::vector<PendingBusy>> pending_;
  void AssignPending(int core);
  std::vector<std::vector<std::string>> tag_names_;
  std::vector<std::vector<TagTime>> tag_times_;       // [core][tag]
  std::vector<std::vector<uint16_t>> buffered_tags_;  // per core: tags with unfolded time
  // Without an event log, a record that continues the previous one of its core (same unit,
  // tag, op and step, starting where it ended) extends it; the merged record is added
  // before any other record of that core, so each core's records keep their order.
  struct MergedBusy {
    sim::BusyRecord r;
    uint64_t count = 0;
  };
  std::vector<MergedBusy> merged_;  // per core
  std::unordered_map<std::string, int> tag_slot_;
  std::vector<TagAgg> tag_aggs_;
  Timeline timeline_;
  EventLog events_;
  TimeFs first_ = kNoTime;
  TimeFs last_ = 0;
};

}  // namespace tpusim::profiler
