// The collective stream (docs/isa.md, "Two instruction streams"): a ring all-reduce run by
// each core's second sequencer while its main stream computes, handed over and awaited
// with xsignal; its copies take the core's DMA engines in turn with the main stream's.
#include <gmock/gmock.h>

#include "board_test_util.h"
#include "compiler/collectives/ring_allreduce.h"

namespace tpusim::sim {
namespace {
using testing::AllReduceInput;
using testing::BoardRun;

constexpr uint64_t kElems = 1 << 20;  // f32[1M]: 4 MiB per core, two halves round the ring
constexpr int kStartFlag = 31;        // collective stream's bank: the main stream's go
constexpr int kDoneFlag = 16;         // main stream's bank: the collective stream's report

// Core `core`'s ring all-reduce program without its final halt.
std::string RingBody(int core) {
  const BoardConfig b = LoadConfig("v3-8");
  collectives::RingAllReduceSpec spec;
  spec.ring = collectives::TorusRing(b.ici.torus_x, b.ici.torus_y, b.cores_per_chip);
  spec.bytes = kElems * 4;
  int position = 0;
  while (spec.ring[position] != core) ++position;
  std::string text = collectives::RingAllReduceProgram(spec, position);
  const size_t halt = text.rfind("halt");
  return text.substr(0, halt);
}

// The main stream's compute: `trips` x 64 vector adds on registers, no memory.
std::string VpuWork(int trips) {
  return "    li r1, " + std::to_string(trips) + "\n    vloop r1, 64\n" + [] {
    std::string body;
    for (int i = 0; i < 64; ++i) body += "    vadd v" + std::to_string(i % 8) + ", v8, v9\n";
    return body;
  }() + "    signal vpu, f0, 1\n    wait seq, f0, 1\n";
}

// Main stream: start the all-reduce, compute, wait for it. Collective stream: the ring,
// drained, then the report.
std::string TwoStreams(int core, int trips) {
  return "    xsignal f" + std::to_string(kStartFlag) + ", 1\n" + VpuWork(trips) +
         "    wait seq, f" + std::to_string(kDoneFlag) +
         ", 1\n    halt\n.collective\n    wait seq, f" + std::to_string(kStartFlag) + ", 1\n" +
         RingBody(core) +
         "    signal dma, f30, 1\n    signal vpu, f30, 1\n    wait seq, f30, 2\n    xsignal f" +
         std::to_string(kDoneFlag) + ", 1\n    halt\n";
}

// Core 0's busy intervals by unit, and where the collective stream's code starts.
struct Core0Records : IActivitySink {
  std::vector<BusyRecord> busy;
  void OnBusy(const BusyRecord& r) override {
    if (r.core == 0) busy.push_back(r);
  }
  void OnWait(const WaitRecord&) override {}
  void OnStep(const StepRecord&) override {}
  // The span [first start, last end) of core 0's records on `unit` in pcs [lo, hi).
  std::pair<TimeFs, TimeFs> Span(isa::Unit unit, uint32_t lo, uint32_t hi) const {
    TimeFs s = ~TimeFs{0}, e = 0;
    for (const BusyRecord& r : busy)
      if (r.unit == unit && r.pc >= lo && r.pc < hi)
        s = std::min(s, r.start), e = std::max(e, r.end);
    return {s, e};
  }
};

struct TwoStreamRun {
  BoardConfig board = LoadConfig("v3-8");
  Core0Records records;
  std::unique_ptr<Simulation> sim;
  std::vector<isa::Program> programs;
  explicit TwoStreamRun(const std::vector<std::string>& texts) {
    sim = std::make_unique<Simulation>(board, RunOptions{.functional = true, .sink = &records});
    for (const std::string& t : texts) {
      auto p = isa::Assemble(t);
      if (!p.ok()) ADD_FAILURE() << p.error().message;
      programs.push_back(p.ok() ? p.value() : isa::Program{});
    }
    for (const isa::Program& p : programs) sim->AddCore(p);
  }
  uint32_t entry() const { return programs[0].collective_entry.value_or(0); }
};

TEST(CollectiveStream, AnAllReduceRunsBesideTheMainStreamsCompute) {
  std::vector<std::string> both(8);
  for (int c = 0; c < 8; ++c) both[c] = TwoStreams(c, /*trips=*/1600);
  TwoStreamRun run(both);
  for (int c = 0; c < 8; ++c) {
    std::vector<float> x(kElems);
    for (uint64_t i = 0; i < kElems; ++i) x[i] = AllReduceInput(c, i);
    run.sim->core(c).hbm().Write(0, x.data(), x.size() * 4);
  }
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (int c = 0; c < 8; ++c) {
    std::vector<float> y(kElems);
    run.sim->core(c).hbm().Read(0, y.data(), y.size() * 4);
    for (uint64_t i = 0; i < kElems; i += 991) {
      float want = 0;
      for (int k = 0; k < 8; ++k) want += AllReduceInput(k, i);
      ASSERT_EQ(y[i], want) << "core " << c << " element " << i;
    }
  }
  const uint32_t entry = run.entry();
  const auto [compute_start, compute_end] = run.records.Span(isa::Unit::kVpu, 0, entry);
  const auto [ring_start, ring_end] = run.records.Span(isa::Unit::kDma, entry, UINT32_MAX);
  const TimeFs compute = compute_end - compute_start, ring = ring_end - ring_start;
  ASSERT_GT(compute, 0u);
  ASSERT_GT(ring, 0u);
  // Both start at once and run side by side: the run lasts the longer of the two (plus
  // the hand-over), well under the two back to back.
  EXPECT_LT(ring_start, compute_end);
  EXPECT_LT(compute_start, ring_end);
  EXPECT_LT(r.end_fs, std::max(compute, ring) * 11 / 10);
  EXPECT_LT(r.end_fs * 10, (compute + ring) * 7);
}

// The main stream fills every DMA engine with long copies; the collective stream's short
// copy starts only when one of them ends (one set of engines per core).
TEST(CollectiveStream, ItsCopiesWaitForTheCoresDmaEngines) {
  const int engines = LoadConfig("v3-8").core.dma_engines;
  std::string text =
      ".desc big rows=1 row_bytes=4194304 src_stride=0 dst_stride=0\n"
      ".desc small rows=1 row_bytes=4096 src_stride=0 dst_stride=0\n"
      "    li r1, 0\n    li r2, 67108864\n";
  for (int e = 0; e < engines; ++e) text += "    dma.hh r2, r1, big, f1\n";
  text += "    xsignal f31, 1\n    wait seq, f1, " + std::to_string(engines) +
          "\n    wait seq, f16, 1\n    halt\n"
          ".collective\n    wait seq, f31, 1\n    li r3, 0\n    li r4, 134217728\n"
          "    dma.hh r4, r3, small, f1\n    wait seq, f1, 1\n    xsignal f16, 1\n    halt\n";
  TwoStreamRun run({text});
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  const uint32_t entry = run.entry();
  TimeFs first_big_end = ~TimeFs{0};
  for (const BusyRecord& b : run.records.busy)
    if (b.unit == isa::Unit::kDma && b.pc < entry) first_big_end = std::min(first_big_end, b.end);
  const auto [small_start, small_end] = run.records.Span(isa::Unit::kDma, entry, UINT32_MAX);
  EXPECT_GE(small_start, first_big_end);
  EXPECT_GT(small_end, small_start);
  // Each stream's f1 counted its own copies: both waits were met, nothing left over.
  EXPECT_EQ(run.sim->core(0).ctx().flags.value(1), 0);
  EXPECT_EQ(run.sim->core(0).ctx().collective_flags.value(1), 0);
}

TEST(CollectiveStream, XsignalWithoutACollectiveStreamIsAnError) {
  BoardRun run({"    xsignal f3, 1\n    halt\n"});
  RunReport r = run.sim->Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("that has none"));
}

TEST(CollectiveStream, TheMainStreamMustHaltBeforeTheCollectiveStreamsCode) {
  BoardRun run({"    nop\n.collective\n    halt\n"});
  RunReport r = run.sim->Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("runs into the collective stream's code"));
}

TEST(CollectiveStream, TheCollectiveStreamHasNoMxu) {
  BoardRun run({"    halt\n.collective\n    li r1, 0\n    mxu.ldw m0, r1\n    halt\n"});
  RunReport r = run.sim->Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("the collective stream does not have"));
}

}  // namespace
}  // namespace tpusim::sim
