#include "traces/chrome_trace.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "traces/atomic_file.h"
#include "traces/json_util.h"
#include "traces/trace_tracks.h"

namespace tpusim::traces {
namespace {

using profiler::HostKind;
using profiler::Recorder;
using profiler::TimeFs;

template <class R>
std::vector<uint32_t> SortedFor(const std::vector<R>& v, int core) {
  std::vector<uint32_t> idx;
  for (uint32_t i = 0; i < v.size(); ++i)
    if (v[i].core == core) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
    return v[a].start != v[b].start ? v[a].start < v[b].start : v[a].end > v[b].end;
  });
  return idx;
}

std::string BusyArgs(const sim::BusyRecord& r) {
  return "{\"pc\":" + std::to_string(r.pc) + ",\"flops\":" + Fixed(r.flops, 0) +
         ",\"bytes\":" + std::to_string(r.bytes) + ",\"step\":" + std::to_string(r.step) + "}";
}

std::string_view Mnemonic(isa::Opcode op) {
  return op < isa::Opcode::kCount ? isa::Info(op).mnemonic : "?";
}

// Unit tracks: instructions of one op on one unit that follow each other within
// kRunGapFs become one event named after the op, with the instruction count and the busy
// share of the span in its args, so a kernel's thousands of vector instructions read as
// one span; a lone instruction keeps its mnemonic and pc. Metrics never use these spans.
constexpr TimeFs kRunGapFs = 100'000'000;  // 100 ns (femtoseconds), about 94 cycles at 940 MHz
void WriteUnitRuns(TraceWriter& w, const Recorder& rec, int core,
                   const std::vector<uint32_t>& idx) {
  const auto& busy = rec.events().busy;
  struct Run {
    uint32_t first = 0;
    TimeFs end = 0;
    uint64_t count = 0, bytes = 0;
    double flops = 0;
    TimeFs busy = 0;
  };
  std::map<int, Run> open;  // by unit
  auto emit = [&](const Run& run) {
    const sim::BusyRecord& r = busy[run.first];
    if (run.count == 1) {
      w.Complete(core, UnitTrack(r.unit, r.stream), Mnemonic(r.op), r.start, r.end, BusyArgs(r));
      return;
    }
    std::string name = r.tag == 0 ? "(untagged)" : rec.TagName(core, r.tag);
    w.Complete(
        core, UnitTrack(r.unit, r.stream), name, r.start, run.end,
        "{\"instructions\":" + std::to_string(run.count) + ",\"flops\":" + Fixed(run.flops, 0) +
            ",\"bytes\":" + std::to_string(run.bytes) + ",\"busy_percent\":" +
            Fixed(100.0 * static_cast<double>(run.busy) / static_cast<double>(run.end - r.start),
                  1) +
            ",\"step\":" + std::to_string(r.step) + "}");
  };
  for (uint32_t i : idx) {
    const sim::BusyRecord& r = busy[i];
    const int unit = static_cast<int>(r.unit) + isa::kNumUnits * r.stream;
    if (r.unit == isa::Unit::kDma) {  // concurrent copies keep their own events and tracks
      w.Complete(core, UnitTrack(r.unit, r.stream), Mnemonic(r.op), r.start, r.end, BusyArgs(r));
      continue;
    }
    auto it = open.find(unit);
    if (it != open.end()) {
      const sim::BusyRecord& first = busy[it->second.first];
      Run& run = it->second;
      if (r.tag == first.tag && r.step == first.step && r.start <= run.end + kRunGapFs) {
        run.busy += r.end - std::max(r.start, std::min(run.end, r.end));
        run.end = std::max(run.end, r.end);
        ++run.count, run.bytes += r.bytes, run.flops += r.flops;
        continue;
      }
      emit(run);
    }
    open[unit] = Run{i, r.end, 1, r.bytes, r.flops, r.end - r.start};
  }
  for (const auto& [unit, run] : open) emit(run);
}

// The XLA Ops track of one instruction stream (the collective stream's has its own): one
// event per run of an op's unit records, from its first to its last until another op's work
// starts after it, so that two ops in flight at once (kernel windows) show on two lanes, "XLA
// Ops" and "XLA Ops #2", instead of cutting each other up; `origins` adds the framework op
// and source.
void WriteXlaOps(TraceWriter& w, const Recorder& rec, int core, const std::vector<uint32_t>& all,
                 const std::map<std::string, profiler::OpOrigin>& origins, int stream) {
  const auto& busy = rec.events().busy;
  struct Segment {
    uint16_t tag;
    TimeFs start, end;
    double flops = 0;
    uint64_t bytes = 0;
  };
  std::vector<Segment> done;
  std::map<uint16_t, Segment> open;  // by tag: the run still growing
  for (uint32_t i : all) {
    const sim::BusyRecord& r = busy[i];
    // The sequencer's runs of scalar work issue the next op's instructions while the units
    // still run the last one's (the Scalar track shows them): the units say when an op runs.
    if (r.stream != stream || r.unit == isa::Unit::kScalar) continue;
    // A run ends where another op's record starts after it; an op's own gaps stay inside.
    for (auto it = open.begin(); it != open.end();)
      if (it->second.end <= r.start && it->first != r.tag) {
        done.push_back(it->second);
        it = open.erase(it);
      } else {
        ++it;
      }
    auto [it, fresh] = open.try_emplace(r.tag, Segment{r.tag, r.start, r.end});
    Segment& seg = it->second;
    seg.end = std::max(seg.end, r.end);
    seg.flops += r.flops;
    seg.bytes += r.bytes;
  }
  for (const auto& [tag, seg] : open) done.push_back(seg);
  std::stable_sort(done.begin(), done.end(), [](const Segment& a, const Segment& b) {
    return a.start != b.start ? a.start < b.start : a.tag < b.tag;
  });
  const Track track = stream ? Track::kCollectiveOps : Track::kXlaOps;
  for (const Segment& seg : done) {
    std::string name = seg.tag == 0 ? "(untagged)" : rec.TagName(core, seg.tag);
    if (name.empty()) name = "tag#" + std::to_string(seg.tag);
    std::string args =
        "{\"flops\":" + Fixed(seg.flops, 0) + ",\"bytes\":" + std::to_string(seg.bytes);
    if (const auto o = origins.find(name); o != origins.end()) {
      args += ",\"framework_op\":" + JsonString(o->second.framework_op) +
              ",\"source\":" + JsonString(o->second.source);
    }
    w.Complete(core, track, name, seg.start, seg.end, args + "}");
  }
}

void WriteCore(TraceWriter& w, const Recorder& rec, int core,
               const std::map<std::string, profiler::OpOrigin>& origins) {
  const profiler::EventLog& ev = rec.events();
  for (uint32_t i : SortedFor(ev.steps, core)) {
    const sim::StepRecord& s = ev.steps[i];
    w.Complete(core, Track::kSteps, "step " + std::to_string(s.step), s.start, s.end,
               "{\"step\":" + std::to_string(s.step) + "}");
  }
  const std::vector<uint32_t> busy = SortedFor(ev.busy, core);
  WriteXlaOps(w, rec, core, busy, origins, /*stream=*/0);
  WriteXlaOps(w, rec, core, busy, origins, /*stream=*/1);
  WriteUnitRuns(w, rec, core, busy);
  for (uint32_t i : SortedFor(ev.waits, core)) {
    const sim::WaitRecord& r = ev.waits[i];
    w.Complete(core, Track::kSyncFlags, "wait f" + std::to_string(r.flag), r.start, r.end,
               "{\"unit\":" + JsonString(isa::UnitName(r.unit)) +
                   ",\"step\":" + std::to_string(r.step) + "}");
  }
}

void WriteHost(TraceWriter& w, const Recorder& rec) {
  const auto& host = rec.events().host;
  std::vector<uint32_t> idx(host.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](uint32_t a, uint32_t b) { return host[a].start < host[b].start; });
  for (uint32_t i : idx) {
    const profiler::HostRecord& r = host[i];
    const std::string args =
        "{\"core\":" + std::to_string(r.core) + ",\"step\":" + std::to_string(r.step) + "}";
    if (r.kind == HostKind::kAllReduce) {
      w.Complete(r.core, Track::kIci, "all-reduce", r.start, r.end, args);
    } else {
      w.Complete(w.host_pid(), HostTrack(r.kind), std::string(profiler::HostKindName(r.kind)),
                 r.start, r.end, args);
    }
  }
}

void WriteCounters(TraceWriter& w, const Recorder& rec, TimeFs end) {
  const profiler::Timeline& tl = rec.timeline();
  const double width = static_cast<double>(tl.width());
  const int mxus = std::max(1, rec.options().mxus_per_core);
  for (int c = 0; c < rec.num_cores(); ++c) {
    for (size_t b = 0; b < tl.num_buckets(); ++b) {
      const TimeFs t = b * tl.width();
      if (t < w.origin() || t >= end) continue;
      const double mxu = 100.0 * tl.At(c, profiler::Series::kMxuBusy, b) / (mxus * width);
      const double idle = 100.0 - 100.0 * tl.At(c, profiler::Series::kUnionBusy, b) / width;
      w.Counter(c, "MXU utilization", t, mxu);
      w.Counter(c, "Idle time", t, idle);
    }
  }
}

}  // namespace

std::string WriteChromeTrace(const Recorder& rec, const std::string& path,
                             const ChromeTraceOptions& options) {
  const profiler::EventLog& ev = rec.events();
  TimeFs origin = profiler::kNoTime, end = 0;
  auto span = [&](const auto& v) {
    for (const auto& r : v) {
      origin = std::min(origin, r.start);
      end = std::max(end, r.end);
    }
  };
  span(ev.busy);
  span(ev.waits);
  span(ev.steps);
  span(ev.host);
  if (origin == profiler::kNoTime) origin = end = rec.first_time();

  AtomicFile file(path);
  TraceWriter w(file, rec.num_cores(), origin);
  for (int c = 0; c < rec.num_cores(); ++c) WriteCore(w, rec, c, options.op_origins);
  WriteHost(w, rec);
  if (options.counters) WriteCounters(w, rec, end);
  w.Finish(rec.options().mxus_per_core, ev.truncated, ev.dropped);
  file.Commit();
  return file.error();
}

}  // namespace tpusim::traces
