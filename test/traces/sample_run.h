// A fixed, hand-built record stream of a 2-core run used by the traces tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "profiler/report.h"
#include "test/profiler/test_records.h"

namespace tpusim::traces::testing {

// The whole file at `path` (empty if it cannot be read).
inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using namespace profiler::testing;  // NOLINT
using isa::Opcode;
using isa::Unit;
using profiler::HostKind;

inline profiler::HardwarePeaks SamplePeaks() {
  profiler::HardwarePeaks p;
  p.flops_per_s_per_core = 61.5e12;
  p.hbm_bytes_per_s_per_core = 450e9;
  p.clock_hz = 940e6;
  p.mxus_per_core = 2;
  p.hbm_capacity_bytes_per_core = 16ull << 30;
  return p;
}

inline void FeedSample(profiler::Recorder& rec) {
  for (int c = 0; c < 2; ++c) {
    rec.SetTags(c, {"", "dot.1", "fusion \"relu\"\n\x01", "copy.3"});
    for (uint32_t s = 0; s < 2; ++s) {
      const double t = s * 100.0 + c;
      rec.OnHost(Host(c, HostKind::kInfeedWait, t, t + 8, s));
      rec.OnBusy(Busy(c, Unit::kDma, t + 8, t + 20, 3, s, 0, 1 << 20, Opcode::kMxuMma));
      rec.OnBusy(Busy(c, Unit::kDma, t + 10, t + 25, 3, s, 0, 1 << 20, Opcode::kMxuMma));
      rec.OnBusy(Busy(c, Unit::kMxu0, t + 20, t + 60, 1, s, 4e9, 1 << 21, Opcode::kMxuMm));
      rec.OnBusy(Busy(c, Unit::kMxu1, t + 22, t + 50, 1, s, 2e9, 1 << 20, Opcode::kMxuMma));
      rec.OnBusy(Busy(c, Unit::kVpu, t + 55, t + 70, 2, s, 1e6, 1 << 18, Opcode::kNop));
      rec.OnBusy(Busy(c, Unit::kScalar, t + 70, t + 71, 0, s));
      sim::WaitRecord w{static_cast<uint16_t>(c),
                        Unit::kVpu,
                        static_cast<profiler::TimeFs>((t + 50) * kUs),
                        static_cast<profiler::TimeFs>((t + 55) * kUs),
                        3,
                        s};
      rec.OnWait(w);
      rec.OnHost(Host(c, HostKind::kAllReduce, t + 71, t + 85, s));
      rec.OnHost(Host(c, HostKind::kOutfeed, t + 85, t + 88, s));
      rec.OnStep(Step(c, s, t, t + 95 + c));
    }
  }
  rec.Finish();
}

inline profiler::RunContext SampleContext() {
  profiler::RunContext ctx;
  ctx.batch_per_core = 64;
  ctx.steps_per_execution = 1;
  ctx.hbm_peak_bytes_per_core = 3ull << 30;
  ctx.compilations = 1;
  return ctx;
}

inline std::string TempDir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d ? d : "/tmp";
}

}  // namespace tpusim::traces::testing
