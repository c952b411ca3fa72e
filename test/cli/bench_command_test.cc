// tpusim bench as users meet it: the benchmark names (golden), one-line errors with
// non-zero exit codes, and one merged JSON file. Runs at most two tiny benchmarks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test/cli/cli_test_util.h"

namespace tpusim::cli {
namespace {
using ::testing::HasSubstr;

#define SKIP_WITHOUT_BENCH_BINARY() \
  if (!TPUSIM_BENCH_BUILT) GTEST_SKIP() << "configured with -DTPUSIM_BENCH=OFF"

TEST(BenchCommand, ListMatchesGolden) {
  SKIP_WITHOUT_BENCH_BINARY();
  const std::string path = "test/cli/golden/bench_list.txt";
  Output o = Tpusim("bench --list");
  EXPECT_EQ(o.status, 0);
  if (std::getenv("TPUSIM_UPDATE_GOLDEN")) std::ofstream(path) << o.text;
  EXPECT_EQ(o.text, Slurp(path));
}

TEST(BenchCommand, ListFollowsTheFilter) {
  SKIP_WITHOUT_BENCH_BINARY();
  Output o = Tpusim("bench --list --filter 'BM_MatmulBatchPerCore/(1|128)/'");
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.text,
            "BM_MatmulBatchPerCore/1/iterations:1\nBM_MatmulBatchPerCore/128/iterations:1\n");
}

TEST(BenchCommand, FilterMatchingNothingIsAOneLineError) {
  SKIP_WITHOUT_BENCH_BINARY();
  Output o = Tpusim("bench --filter NoSuchBenchmark");
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(
      o.text,
      "tpusim bench: no benchmark matches --filter 'NoSuchBenchmark' (tpusim bench --list)\n");
}

TEST(BenchCommand, InvalidFilterIsAUsageError) {
  Output o = Tpusim("bench --filter '(unclosed'");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("is not a valid regular expression"));
}

TEST(BenchCommand, MissingBenchBinaryTellsHowToBuildIt) {
  Output o = Tpusim("bench --list", "TPUSIM_BENCH_BINARY=/nonexistent/tpusim_bench ");
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.text,
            "tpusim bench: no benchmark binary at /nonexistent/tpusim_bench; build it with cmake "
            "-DTPUSIM_BENCH=ON (or set TPUSIM_BENCH_BINARY)\n");
}

TEST(BenchCommand, UnknownConfigIsAOneLineError) {
  Output o = Tpusim("bench --list --config no-such-board");
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.text, "tpusim bench: cannot open config file 'no-such-board'\n");
}

TEST(BenchCommand, HelpShowsAnExample) {
  Output o = Tpusim("bench --help");
  EXPECT_EQ(o.status, 0);
  EXPECT_THAT(o.text, HasSubstr("example: tpusim bench --filter"));
}

TEST(BenchCommand, RunsEachBenchmarkAndMergesTheirJson) {
  SKIP_WITHOUT_BENCH_BINARY();
  const std::string json =
      ::testing::TempDir() + "/tpusim_bench_" + std::to_string(::getpid()) + ".json";
  Output o = Tpusim("bench --filter 'BM_HbmToVmemCopy/(4096|16384)/' --json " + json);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("BM_HbmToVmemCopy/4096/iterations:1"));
  EXPECT_THAT(o.text, HasSubstr("copy_GBps="));
  nlohmann::json merged = nlohmann::json::parse(Slurp(json));
  ASSERT_EQ(merged["benchmarks"].size(), 2u);
  EXPECT_TRUE(merged.contains("context"));
  EXPECT_EQ(merged["benchmarks"][1]["name"], "BM_HbmToVmemCopy/16384/iterations:1");
  EXPECT_GT(merged["benchmarks"][1]["copy_GBps"].get<double>(), 0);
  std::remove(json.c_str());
}

}  // namespace
}  // namespace tpusim::cli
