// A one-line progress bar on stderr for long runs:
//   [#####     ] 42% step 3/10 · 1.2 s
// It draws only when its stream is a terminal, only once the run has lasted more than
// 1 s of wall time, at most ~10 times a second, and Finish() (or the destructor) clears
// the line, so short runs and redirected output never see it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tpusim::driver {

// The bar's text without "\r": `width` cells filled in proportion to `fraction` (clamped
// to [0, 1]), the whole percent (rounded down), the label, the elapsed seconds.
std::string FormatProgress(double fraction, std::string_view label, double elapsed_s,
                           int width = 10);

class ProgressBar {
 public:
  explicit ProgressBar(int64_t total_steps, std::FILE* out = stderr);
  ~ProgressBar() { Finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` of the total steps are complete; the label defaults to "step done/total".
  void Update(int64_t done, std::string_view label = {});
  // Erases the bar (to print other lines); a later Update() draws it again, still at
  // most ~10 times a second.
  void Clear();
  // Clears the line if the bar was drawn. Further updates draw nothing.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr double kShowAfterS = 1.0, kRedrawEveryS = 0.1;

  int64_t total_;
  std::FILE* out_;
  bool terminal_, finished_ = false;
  Clock::time_point start_ = Clock::now(), last_draw_{};  // {}: never drawn
  size_t drawn_chars_ = 0;  // width of the line on screen, 0 when nothing is drawn
};

}  // namespace tpusim::driver
