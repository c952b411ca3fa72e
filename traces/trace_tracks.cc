#include "traces/trace_tracks.h"

#include "traces/json_util.h"

namespace tpusim::traces {
namespace {
constexpr int kLaneStride = 100;  // tid = track * 100 + lane
}

Track UnitTrack(isa::Unit u, int stream) {
  if (stream == 1)
    return u == isa::Unit::kDma   ? Track::kCollectiveDma
           : u == isa::Unit::kVpu ? Track::kCollectiveVpu
                                  : Track::kCollectiveScalar;
  switch (u) {
    case isa::Unit::kDma:
      return Track::kDma;
    case isa::Unit::kMxu0:
      return Track::kMxu0;
    case isa::Unit::kMxu1:
      return Track::kMxu1;
    case isa::Unit::kMxu2:
      return Track::kMxu2;
    case isa::Unit::kMxu3:
      return Track::kMxu3;
    case isa::Unit::kVpu:
      return Track::kVpu;
    default:
      return Track::kScalar;
  }
}

Track HostTrack(profiler::HostKind k) {
  switch (k) {
    case profiler::HostKind::kInfeedWait:
      return Track::kInfeedWait;
    case profiler::HostKind::kOutfeed:
      return Track::kOutfeed;
    case profiler::HostKind::kHostToDevice:
      return Track::kHostToDevice;
    default:
      return Track::kHostOverhead;
  }
}

std::string TrackName(Track t) {
  switch (t) {
    case Track::kSteps:
      return "Steps";
    case Track::kXlaOps:
      return "XLA Ops";
    case Track::kMxu0:
      return "MXU0";
    case Track::kMxu1:
      return "MXU1";
    case Track::kMxu2:
      return "MXU2";
    case Track::kMxu3:
      return "MXU3";
    case Track::kVpu:
      return "VPU";
    case Track::kScalar:
      return "Scalar";
    case Track::kDma:
      return "DMA";
    case Track::kIci:
      return "ICI";
    case Track::kSyncFlags:
      return "Sync Flags";
    case Track::kCollectiveOps:
      return "Collective stream: XLA Ops";
    case Track::kCollectiveDma:
      return "Collective stream: DMA";
    case Track::kCollectiveVpu:
      return "Collective stream: VPU";
    case Track::kCollectiveScalar:
      return "Collective stream: Scalar";
    case Track::kInfeedWait:
      return "Infeed wait";
    case Track::kOutfeed:
      return "Outfeed";
    case Track::kHostToDevice:
      return "Host to device";
    case Track::kHostOverhead:
      return "Host overhead";
  }
  return "?";
}

TraceWriter::TraceWriter(AtomicFile& out, int num_cores, profiler::TimeFs origin)
    : out_(out), num_cores_(num_cores), origin_(origin) {
  out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
}

void TraceWriter::Begin() {
  out_ << (first_ ? "\n" : ",\n");
  first_ = false;
}

std::string TraceWriter::Ts(profiler::TimeFs t) const {
  return MicrosFromPs((t > origin_ ? t - origin_ : 0) / 1000);
}

void TraceWriter::Complete(int pid, Track track, std::string_view name, profiler::TimeFs start,
                           profiler::TimeFs end, std::string_view args) {
  std::vector<profiler::TimeFs>& ends = lanes_[{pid, static_cast<int>(track)}];
  size_t lane = 0;
  while (lane < ends.size() && ends[lane] > start) ++lane;
  if (lane == ends.size()) ends.push_back(end);
  ends[lane] = end;
  const int tid = static_cast<int>(track) * kLaneStride + static_cast<int>(lane);
  used_.insert({pid, tid});
  const uint64_t s_ps = (start - origin_) / 1000, e_ps = (end - origin_) / 1000;
  line_ = "{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
          ",\"ts\":" + MicrosFromPs(s_ps) + ",\"dur\":" + MicrosFromPs(e_ps - s_ps) + ",\"name\":";
  AppendJsonString(line_, name);
  if (!args.empty()) (line_ += ",\"args\":") += args;
  line_ += "}";
  Begin();
  out_ << line_;
}

void TraceWriter::Counter(int pid, std::string_view name, profiler::TimeFs t, double value) {
  Begin();
  out_ << "{\"ph\":\"C\",\"pid\":" << std::to_string(pid) << ",\"ts\":" << Ts(t)
       << ",\"name\":" << JsonString(name) << ",\"args\":{\"percent\":" << Fixed(value, 3) << "}}";
}

void TraceWriter::Meta(int pid, int tid, std::string_view what, std::string_view key,
                       std::string_view value) {
  Begin();
  out_ << "{\"ph\":\"M\",\"pid\":" << std::to_string(pid) << ",\"tid\":" << std::to_string(tid)
       << ",\"name\":\"" << what << "\",\"args\":{\"" << key << "\":" << value << "}}";
}

void TraceWriter::Finish(int mxus_per_core, bool truncated, uint64_t dropped) {
  std::vector<Track> base = {Track::kSteps, Track::kXlaOps};
  for (int i = 0; i < mxus_per_core && i < 4; ++i) {
    base.push_back(static_cast<Track>(static_cast<int>(Track::kMxu0) + i));
  }
  for (Track t : {Track::kVpu, Track::kScalar, Track::kDma, Track::kIci, Track::kSyncFlags}) {
    base.push_back(t);
  }
  for (int c = 0; c < num_cores_; ++c) {
    for (Track t : base) used_.insert({c, static_cast<int>(t) * kLaneStride});
  }
  for (int pid = 0; pid <= num_cores_; ++pid) {
    const std::string name = pid == num_cores_ ? "Host" : "TPU core " + std::to_string(pid);
    Meta(pid, 0, "process_name", "name", JsonString(name));
    Meta(pid, 0, "process_sort_index", "sort_index", std::to_string(pid));
  }
  for (const auto& [pid, tid] : used_) {
    const int lane = tid % kLaneStride;
    std::string name = TrackName(static_cast<Track>(tid / kLaneStride));
    if (lane > 0) name += " #" + std::to_string(lane + 1);
    Meta(pid, tid, "thread_name", "name", JsonString(name));
    Meta(pid, tid, "thread_sort_index", "sort_index", std::to_string(tid));
  }
  out_ << "\n],\"otherData\":{\"truncated\":" << (truncated ? "true" : "false")
       << ",\"dropped_events\":" << std::to_string(dropped) << "}}\n";
}

}  // namespace tpusim::traces
