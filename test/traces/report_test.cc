#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/traces/sample_run.h"
#include "traces/html_report.h"
#include "traces/json_util.h"
#include "traces/monitor.h"
#include "traces/summary.h"

namespace tpusim::traces {
namespace {

using namespace testing;  // NOLINT

profiler::Report SampleReport(const profiler::Recorder& rec) {
  return profiler::BuildReport(rec, SamplePeaks(), SampleContext());
}

TEST(Summary, MatchesGolden) {
  profiler::Recorder rec(Opts(2));
  FeedSample(rec);
  const std::string got = SummaryJson(SampleReport(rec));
  const std::string golden_path = "test/traces/golden/summary.json";
  if (std::getenv("TPUSIM_UPDATE_GOLDEN")) {
    std::ofstream(golden_path) << got;
  }
  EXPECT_EQ(got, Slurp(golden_path)) << "set TPUSIM_UPDATE_GOLDEN=1 to regenerate";
}

TEST(Summary, AtomicAndDeterministic) {
  const std::string path = TempDir() + "/tpusim_summary_" + std::to_string(::getpid()) + ".json";
  std::string texts[2];
  for (std::string& t : texts) {
    profiler::Recorder rec(Opts(2));
    FeedSample(rec);
    ASSERT_EQ(WriteSummary(SampleReport(rec), path), "");
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    t = Slurp(path);
  }
  EXPECT_EQ(texts[0], texts[1]);
  std::filesystem::remove(path);
  profiler::Recorder rec(Opts(2));
  FeedSample(rec);
  EXPECT_NE(WriteSummary(SampleReport(rec), "/nonexistent_dir_tpusim/s.json"), "");
}

TEST(Monitor, PrintsTheRealProfilersLines) {
  profiler::Recorder rec(Opts(1));
  rec.OnStep(Step(0, 0, 0, 100));
  rec.OnHost(Host(0, HostKind::kInfeedWait, 0, 10, 0));
  rec.OnBusy(Busy(0, Unit::kMxu0, 10, 60));
  rec.OnBusy(Busy(0, Unit::kVpu, 50, 70));
  rec.OnStep(Step(0, 1, 100, 190));
  rec.Finish();
  profiler::RunContext ctx;
  EXPECT_EQ(FormatMonitor(rec, ctx, 0, 200 * kUs),
            "Timestamp: 00:00:00.000200\n"
            "TPU type: TPU v3\n"
            "Number of TPU cores: 1 (Replica count = 1, num cores per replica = 1)\n"
            "Utilization of TPU Matrix Units (higher is better): 12.5%\n"
            "TPU idle time (lower is better): 70.0%\n"
            "Step time: 0.1ms (avg), 0.1ms (min), 0.1ms (max)\n"
            "Infeed percentage: 5.0% (avg), 5.0% (min), 5.0% (max)\n");
  // A window over the first step only.
  const std::string first = FormatMonitor(rec, ctx, 0, 100 * kUs);
  EXPECT_NE(first.find("(higher is better): 25.0%"), std::string::npos) << first;
  EXPECT_NE(first.find("(lower is better): 40.0%"), std::string::npos) << first;
  EXPECT_NE(first.find("Infeed percentage: 10.0% (avg)"), std::string::npos) << first;
}

TEST(Html, ContainsTheRunsNumbers) {
  profiler::Recorder rec(Opts(2));
  FeedSample(rec);
  const profiler::Report report = SampleReport(rec);
  const std::string html = HtmlReport(report, rec);
  EXPECT_EQ(html.find("http"), std::string::npos);  // no network
  EXPECT_NE(html.find(Fixed(report.metrics.mxu_utilization_percent, 1) + "%"), std::string::npos);
  EXPECT_NE(html.find("fusion &quot;relu&quot;"), std::string::npos);
  EXPECT_NE(html.find("small_batch"), std::string::npos);
}

TEST(Html, RendersInHeadlessChromium) {
  const char* candidates[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
  std::string browser;
  for (const char* c : candidates)
    if (std::filesystem::exists(c)) browser = c;
  if (browser.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  profiler::Recorder rec(Opts(2));
  FeedSample(rec);
  const profiler::Report report = SampleReport(rec);
  const std::string base = TempDir() + "/tpusim_html_" + std::to_string(::getpid());
  ASSERT_EQ(WriteHtmlReport(report, rec, base + ".html"), "");
  const std::string cmd = browser +
                          " --headless --no-sandbox --disable-gpu --disable-background-networking "
                          "--dump-dom file://" +
                          base + ".html > " + base + ".dom 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string dom = Slurp(base + ".dom");
  const std::string mxu = Fixed(report.metrics.mxu_utilization_percent, 1) + "%";
  const std::string idle = Fixed(report.metrics.device_idle_time_percent, 1) + "%";
  EXPECT_NE(dom.find("id=\"mxu-utilization\">" + mxu), std::string::npos) << mxu;
  EXPECT_NE(dom.find("id=\"idle-time\">" + idle), std::string::npos) << idle;
  EXPECT_NE(dom.find("dot.1"), std::string::npos);
  EXPECT_NE(dom.find("polyline"), std::string::npos);
  std::filesystem::remove(base + ".html");
  std::filesystem::remove(base + ".dom");
}

}  // namespace
}  // namespace tpusim::traces
