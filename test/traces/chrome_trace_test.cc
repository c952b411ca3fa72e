#include "traces/chrome_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/traces/sample_run.h"
#include "traces/trace_validator.h"

namespace tpusim::traces {
namespace {

using namespace testing;  // NOLINT

std::string PathFor(const std::string& name) {
  return TempDir() + "/tpusim_" + std::to_string(::getpid()) + "_" + name;
}

TEST(ChromeTrace, SampleRunPassesValidator) {
  profiler::Recorder rec(Opts(2));
  FeedSample(rec);
  const std::string path = PathFor("trace.json");
  ASSERT_EQ(WriteChromeTrace(rec, path), "");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const std::string text = Slurp(path);
  const auto v = ValidateChromeTrace(text);
  EXPECT_TRUE(v.empty()) << v.front();
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
  for (const char* s :
       {"\"TPU core 1\"", "\"Host\"", "\"XLA Ops\"", "\"MXU0\"", "\"MXU1\"", "\"DMA #2\"",
        "\"Sync Flags\"", "\"ICI\"", "\"Steps\"", "\"MXU utilization\"", "\"Idle time\"",
        "\"dot.1\"", "\\\"relu\\\"\\u000a\\u0001", "\"ts\":0.000000"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s;
  }
  std::filesystem::remove(path);
}

// Op a's DMA and VPU work with a gap between (one event), op b issued beside it (kernel
// windows: a second lane), b's sequencer work before its units start (not on the op track).
TEST(ChromeTrace, XlaOpsSpanEachOpAndTwoOpsInFlightTakeTwoLanes) {
  profiler::Recorder rec(Opts(1));
  rec.SetTags(0, {"", "a", "b"});
  rec.OnBusy(Busy(0, Unit::kDma, 0, 10, 1));
  rec.OnBusy(Busy(0, Unit::kScalar, 5, 6, 2));
  rec.OnBusy(Busy(0, Unit::kVpu, 20, 30, 1));
  rec.OnBusy(Busy(0, Unit::kDma, 25, 40, 2));
  rec.OnStep(Step(0, 0, 0, 40));
  rec.Finish();
  const std::string path = PathFor("lanes.json");
  ASSERT_EQ(WriteChromeTrace(rec, path), "");
  const std::string text = Slurp(path);
  std::filesystem::remove(path);
  EXPECT_NE(text.find("\"ts\":0.000000,\"dur\":30.000000,\"name\":\"a\""), std::string::npos)
      << text;
  EXPECT_NE(text.find("\"ts\":25.000000,\"dur\":15.000000,\"name\":\"b\""), std::string::npos)
      << text;
  EXPECT_NE(text.find("\"XLA Ops #2\""), std::string::npos);
}

TEST(ChromeTrace, Deterministic) {
  std::string texts[2];
  for (std::string& t : texts) {
    profiler::Recorder rec(Opts(2));
    FeedSample(rec);
    const std::string path = PathFor("det.json");
    ASSERT_EQ(WriteChromeTrace(rec, path), "");
    t = Slurp(path);
    std::filesystem::remove(path);
  }
  EXPECT_EQ(texts[0], texts[1]);
}

TEST(ChromeTrace, UnwritableDirectoryLeavesNothing) {
  profiler::Recorder rec(Opts(2));
  FeedSample(rec);
  const std::string dir = PathFor("ro");
  std::filesystem::create_directory(dir);
  std::filesystem::permissions(
      dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  const std::string path = dir + "/trace.json";
  const std::string err = WriteChromeTrace(rec, path);
  if (::geteuid() != 0) {
    EXPECT_NE(err, "");
  }
  if (!err.empty()) {
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  std::filesystem::remove_all(dir);
  EXPECT_NE(WriteChromeTrace(rec, "/nonexistent_dir_tpusim/x.json"), "");
  EXPECT_FALSE(std::filesystem::exists("/nonexistent_dir_tpusim/x.json.tmp"));
}

TEST(TraceValidator, RejectsBrokenTraces) {
  const std::string meta =
      R"({"ph":"M","pid":0,"tid":0,"name":"process_name","args":{"name":"p"}},)"
      R"({"ph":"M","pid":0,"tid":1,"name":"thread_name","args":{"name":"t"}})";
  auto trace = [&](const std::string& events) {
    return R"({"displayTimeUnit":"ns","traceEvents":[)" + meta + events + "]}";
  };
  EXPECT_TRUE(ValidateChromeTrace(trace(R"(,{"ph":"X","pid":0,"tid":1,"ts":0,"dur":10,"name":"a"},)"
                                        R"({"ph":"X","pid":0,"tid":1,"ts":2,"dur":3,"name":"b"})"))
                  .empty());
  // Partial overlap.
  EXPECT_FALSE(
      ValidateChromeTrace(trace(R"(,{"ph":"X","pid":0,"tid":1,"ts":0,"dur":10,"name":"a"},)"
                                R"({"ph":"X","pid":0,"tid":1,"ts":5,"dur":10,"name":"b"})"))
          .empty());
  // Bad nesting three deep: c starts inside b but outlives it while inside a.
  EXPECT_FALSE(
      ValidateChromeTrace(trace(R"(,{"ph":"X","pid":0,"tid":1,"ts":0,"dur":100,"name":"a"},)"
                                R"({"ph":"X","pid":0,"tid":1,"ts":10,"dur":10,"name":"b"},)"
                                R"({"ph":"X","pid":0,"tid":1,"ts":15,"dur":10,"name":"c"})"))
          .empty());
  // Missing dur, negative ts, unnamed thread, non-numeric counter, array form, raw control.
  EXPECT_FALSE(
      ValidateChromeTrace(trace(R"(,{"ph":"X","pid":0,"tid":1,"ts":0,"name":"a"})")).empty());
  EXPECT_FALSE(
      ValidateChromeTrace(trace(R"(,{"ph":"X","pid":0,"tid":1,"ts":-1,"dur":1,"name":"a"})"))
          .empty());
  EXPECT_FALSE(
      ValidateChromeTrace(trace(R"(,{"ph":"X","pid":0,"tid":2,"ts":0,"dur":1,"name":"a"})"))
          .empty());
  EXPECT_FALSE(
      ValidateChromeTrace(trace(R"(,{"ph":"C","pid":0,"ts":0,"name":"c","args":{"v":"x"}})"))
          .empty());
  EXPECT_FALSE(ValidateChromeTrace("[]").empty());
  EXPECT_FALSE(ValidateChromeTrace(trace(",{\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":0,\"dur\":1,"
                                         "\"name\":\"a\x01\"}"))
                   .empty());
  EXPECT_FALSE(ValidateChromeTrace(R"({"traceEvents":[]})").empty());  // no displayTimeUnit
}

}  // namespace
}  // namespace tpusim::traces
