// The progress bar's text, and that it stays silent off a terminal.
#include "driver/progress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace tpusim::driver {
namespace {

TEST(Progress, FormatsBarPercentLabelAndElapsedSeconds) {
  EXPECT_EQ(FormatProgress(0.42, "step 3/10", 1.23), "[####      ] 42% step 3/10 \u00b7 1.2 s");
  EXPECT_EQ(FormatProgress(0.5, "BM_X/8 (2/4)", 12.06),
            "[#####     ] 50% BM_X/8 (2/4) \u00b7 12.1 s");
}

TEST(Progress, EmptyAndFullBars) {
  EXPECT_EQ(FormatProgress(0, "start", 0), "[          ] 0% start \u00b7 0.0 s");
  EXPECT_EQ(FormatProgress(1, "done", 3), "[##########] 100% done \u00b7 3.0 s");
}

TEST(Progress, PercentIsRoundedDownSoItReaches100OnlyAtTheEnd) {
  EXPECT_EQ(FormatProgress(0.999, "x", 1), "[######### ] 99% x \u00b7 1.0 s");
}

TEST(Progress, OutOfRangeFractionsAreClamped) {
  EXPECT_EQ(FormatProgress(1.7, "x", 1), FormatProgress(1, "x", 1));
  EXPECT_EQ(FormatProgress(-0.2, "x", 1), FormatProgress(0, "x", 1));
  EXPECT_EQ(FormatProgress(std::nan(""), "x", 1), FormatProgress(0, "x", 1));
}

TEST(Progress, WidthIsTheNumberOfCells) {
  EXPECT_EQ(FormatProgress(0.25, "x", 2, 4), "[#   ] 25% x \u00b7 2.0 s");
}

TEST(Progress, WritesNothingWhenTheStreamIsNotATerminal) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressBar bar(10, file);
    for (int i = 0; i <= 10; ++i) bar.Update(i, "working");
    bar.Finish();
  }
  EXPECT_EQ(std::ftell(file), 0);
  std::fclose(file);
}

}  // namespace
}  // namespace tpusim::driver
