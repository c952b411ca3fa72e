#include "profiler/recorder.h"

#include <algorithm>

namespace tpusim::profiler {
namespace {

bool IsMxu(isa::Unit u) { return u >= isa::Unit::kMxu0 && u <= isa::Unit::kMxu3; }

}  // namespace

Recorder::Recorder(RecorderOptions options)
    : options_(options),
      cores_(options.num_cores),
      unions_(options.num_cores),
      step_by_start_(options.num_cores),
      last_step_end_(options.num_cores, 0),
      pending_(options.num_cores),
      tag_names_(options.num_cores, std::vector<std::string>{""}),
      tag_times_(options.num_cores),
      buffered_tags_(options.num_cores),
      merged_(options.num_cores),
      timeline_(options.num_cores, options.sample_interval_fs, options.max_samples) {
  for (BusyUnion& u : unions_) u.set_fold_threshold(options.fold_threshold);
}

void Recorder::SetTags(int core, std::vector<std::string> tags) {
  if (core < 0 || core >= num_cores()) return;
  tag_names_[core] = std::move(tags);
}

const std::string& Recorder::TagName(int core, uint16_t tag) const {
  static const std::string kEmpty;
  if (core < 0 || core >= num_cores() || tag >= tag_names_[core].size()) return kEmpty;
  return tag_names_[core][tag];
}

void Recorder::Touch(TimeFs start, TimeFs end) {
  first_ = std::min(first_, start);
  last_ = std::max(last_, end);
}

bool Recorder::KeepEvent(uint32_t step) {
  if (!options_.keep_events) return false;
  if (step < options_.first_step || step > options_.last_step) return false;
  const EventLog& e = events_;
  if (e.busy.size() + e.waits.size() + e.steps.size() + e.host.size() >= options_.max_events) {
    events_.truncated = true;
    ++events_.dropped;
    return false;
  }
  return true;
}

Recorder::TagTime& Recorder::NewTagTime(int core, uint16_t tag) {
  std::vector<TagTime>& times = tag_times_[core];
  if (tag >= times.size()) times.resize(tag + 1);
  TagTime& s = times[tag];
  if (s.slot < 0) {
    const std::string& given = TagName(core, tag);
    std::string name = tag == 0        ? "(untagged)"
                       : given.empty() ? "tag#" + std::to_string(tag)
                                       : given;
    auto [it, inserted] = tag_slot_.emplace(name, static_cast<int>(tag_aggs_.size()));
    if (inserted) tag_aggs_.push_back(TagAgg{.name = name});
    s.slot = it->second;
  }
  return s;
}

void Recorder::OnBusy(const sim::BusyRecord& r) {
  if (r.core >= num_cores() || r.end < r.start) return;
  if (options_.keep_events) return AddBusy(r, 1);
  MergedBusy& m = merged_[r.core];
  if (m.count && m.r.end == r.start && m.r.unit == r.unit && m.r.tag == r.tag && m.r.op == r.op &&
      m.r.step == r.step) {
    m.r.end = r.end;
    m.r.flops += r.flops;
    m.r.bytes += r.bytes;
    ++m.count;
    return;
  }
  DeliverMerged(r.core);
  m = MergedBusy{r, 1};
}

void Recorder::DeliverMerged(int core) {
  MergedBusy& m = merged_[core];
  if (m.count) AddBusy(m.r, m.count);
  m.count = 0;
}

void Recorder::AddBusy(const sim::BusyRecord& r, uint64_t count) {
  Touch(r.start, r.end);
  CoreAgg& c = cores_[r.core];
  const int u = static_cast<int>(r.unit);
  // An MXU is busy while it streams a matmul (XProf); weight loads and pops overlap it.
  const bool counts = !IsMxu(r.unit) || r.op == isa::Opcode::kMxuMm || r.op == isa::Opcode::kMxuMma;
  if (u < isa::kNumUnits && counts) {
    c.units[u].busy += r.end - r.start;
    c.units[u].count += count;
  }
  c.flops += r.flops;
  c.bytes += r.bytes;
  if (IsMxu(r.unit) && counts) timeline_.Add(r.core, Series::kMxuBusy, r.start, r.end);

  // Op time: the wall time the op's work covers, the union of its intervals on each core
  // (records arrive at issue or, for DMA copies, at completion).
  TagTime& t = TagTimeOf(r.core, r.tag);
  TagAgg& agg = tag_aggs_[t.slot];
  if (t.span_end == 0 || t.span_step != r.step) {
    agg.span += t.span_end - t.span_start;
    t.span_start = r.start, t.span_end = r.end, t.span_step = r.step;
  } else {
    t.span_start = std::min(t.span_start, r.start);
    t.span_end = std::max(t.span_end, r.end);
  }
  agg.flops += r.flops;
  agg.bytes += r.bytes;
  agg.count += count;
  const bool listed = t.un.buffered() > 0;
  t.un.Add(r.start, r.end);
  if (!listed && t.un.buffered() > 0) buffered_tags_[r.core].push_back(r.tag);

  BusyUnion& un = unions_[r.core];
  un.Add(r.start, r.end);
  if (un.ShouldFold()) {
    FoldCore(r.core, un.Watermark());
  }
  if (KeepEvent(r.step)) events_.busy.push_back(r);
}

void Recorder::OnWait(const sim::WaitRecord& r) {
  if (r.core >= num_cores() || r.end < r.start) return;
  DeliverMerged(r.core);
  Touch(r.start, r.end);
  const int u = static_cast<int>(r.unit);
  if (u < isa::kNumUnits) cores_[r.core].units[u].wait += r.end - r.start;
  if (KeepEvent(r.step)) events_.waits.push_back(r);
}

void Recorder::OnStep(const sim::StepRecord& r) {
  if (r.core >= num_cores() || r.end < r.start) return;
  DeliverMerged(r.core);
  Touch(r.start, r.end);
  StepCoreAgg& s = cores_[r.core].steps[r.step];
  if (s.reported()) step_by_start_[r.core].erase(s.start);  // re-reported: replace
  s.start = r.start;
  s.end = r.end;
  step_by_start_[r.core][r.start] = r.step;
  last_step_end_[r.core] = std::max(last_step_end_[r.core], r.end);
  AssignPending(r.core);
  if (KeepEvent(r.step)) events_.steps.push_back(r);
}

void Recorder::OnHost(const HostRecord& r) {
  if (r.core >= num_cores() || r.end < r.start) return;
  DeliverMerged(r.core);
  Touch(r.start, r.end);
  const int k = static_cast<int>(r.kind);
  CoreAgg& c = cores_[r.core];
  c.host[k] += r.end - r.start;
  c.steps[r.step].host[k] += r.end - r.start;
  if (r.kind == HostKind::kInfeedWait) timeline_.Add(r.core, Series::kInfeed, r.start, r.end);
  if (KeepEvent(r.step)) events_.host.push_back(r);
}

void Recorder::FoldCore(int core, TimeFs limit) {
  CoreAgg& c = cores_[core];
  std::vector<PendingBusy>& pending = pending_[core];
  unions_[core].Fold(limit, [&](TimeFs s, TimeFs e) {
    c.busy_union += e - s;
    timeline_.Add(core, Series::kUnionBusy, s, e);
    if (!pending.empty() && pending.back().end == s)
      pending.back().end = e;
    else
      pending.push_back({s, e, s});
  });
  AssignPending(core);
  std::vector<uint16_t>& tags = buffered_tags_[core];
  size_t kept = 0;
  for (uint16_t tag : tags) {
    TagTime& t = tag_times_[core][tag];
    TimeFs& time = tag_aggs_[t.slot].time;
    t.un.Fold(limit, [&time](TimeFs s, TimeFs e) { time += e - s; });
    if (t.un.buffered() > 0) tags[kept++] = tag;
  }
  tags.resize(kept);
}

// Adds the pending busy time below the last reported step end to the steps it falls in.
void Recorder::AssignPending(int core) {
  CoreAgg& c = cores_[core];
  const std::map<TimeFs, uint32_t>& by_start = step_by_start_[core];
  const TimeFs reported = last_step_end_[core];
  std::vector<PendingBusy>& pending = pending_[core];
  size_t done = 0;
  for (PendingBusy& p : pending) {
    const TimeFs s = p.assigned, e = std::min(p.end, reported);
    if (e > s) {
      auto it = by_start.upper_bound(s);
      if (it != by_start.begin()) --it;
      for (; it != by_start.end() && it->first < e; ++it) {
        StepCoreAgg& st = c.steps[it->second];
        const TimeFs lo = std::max(s, st.start), hi = std::min(e, st.end);
        if (hi > lo) st.busy += hi - lo;
      }
      p.assigned = e;
    }
    if (p.assigned < p.end) break;
    ++done;
  }
  pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(done));
}

void Recorder::Flush(TimeFs upto) {
  for (int c = 0; c < num_cores(); ++c) DeliverMerged(c), FoldCore(c, upto);
}

void Recorder::Finish() {
  Flush(kNoTime);
  for (std::vector<TagTime>& times : tag_times_)
    for (TagTime& t : times)
      if (t.slot >= 0) tag_aggs_[t.slot].span += t.span_end - t.span_start, t.span_end = 0;
}

uint64_t Recorder::late_records() const {
  uint64_t n = 0;
  for (const BusyUnion& u : unions_) n += u.late_records();
  for (const std::vector<TagTime>& times : tag_times_)
    for (const TagTime& t : times) n += t.un.late_records();
  return n;
}

}  // namespace tpusim::profiler
