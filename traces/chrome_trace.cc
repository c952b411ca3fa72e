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

// The XLA Ops track of one instruction stream (the collective stream's has its own): each
// union span of the stream's work on the core, cut where the tag changes.
// One event per run of an op's busy records; `origins` adds the framework op and source.
void WriteXlaOps(TraceWriter& w, const Recorder& rec, int core, const std::vector<uint32_t>& all,
                 const std::map<std::string, profiler::OpOrigin>& origins, int stream) {
  const auto& busy = rec.events().busy;
  std::vector<uint32_t> idx;  // the stream's records
  for (uint32_t i : all)
    if (busy[i].stream == stream) idx.push_back(i);
  const Track track = stream ? Track::kCollectiveOps : Track::kXlaOps;
  bool open = false;
  uint16_t tag = 0;
  TimeFs seg_start = 0, span_end = 0;
  double flops = 0;
  uint64_t bytes = 0;
  auto emit = [&](TimeFs end) {
    if (end > seg_start) {
      std::string name = tag == 0 ? "(untagged)" : rec.TagName(core, tag);
      if (name.empty()) name = "tag#" + std::to_string(tag);
      std::string args = "{\"flops\":" + Fixed(flops, 0) + ",\"bytes\":" + std::to_string(bytes);
      if (const auto it = origins.find(name); it != origins.end()) {
        args += ",\"framework_op\":" + JsonString(it->second.framework_op) +
                ",\"source\":" + JsonString(it->second.source);
      }
      w.Complete(core, track, name, seg_start, end, args + "}");
    }
    flops = 0;
    bytes = 0;
  };
  for (uint32_t i : idx) {
    const sim::BusyRecord& r = busy[i];
    if (open && r.start >= span_end) {
      emit(span_end);
      open = false;
    }
    if (!open) {
      open = true;
      tag = r.tag;
      seg_start = r.start;
      span_end = r.end;
    } else if (r.tag != tag) {
      emit(r.start);
      tag = r.tag;
      seg_start = r.start;
    }
    span_end = std::max(span_end, r.end);
    flops += r.flops;
    bytes += r.bytes;
  }
  if (open) emit(span_end);
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
