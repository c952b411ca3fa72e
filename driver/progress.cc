#include "driver/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace tpusim::driver {

std::string FormatProgress(double fraction, std::string_view label, double elapsed_s, int width) {
  if (!(fraction >= 0)) fraction = 0;  // also NaN
  fraction = std::min(fraction, 1.0);
  const int filled = static_cast<int>(std::floor(fraction * width));
  const int percent = static_cast<int>(std::floor(fraction * 100));
  char tail[48];
  std::snprintf(tail, sizeof tail, "] %d%% ", percent);
  std::string line = "[" + std::string(filled, '#') + std::string(width - filled, ' ') + tail;
  line += label;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, " \u00b7 %.1f s", std::max(elapsed_s, 0.0));
  return line + seconds;
}

ProgressBar::ProgressBar(int64_t total_steps, std::FILE* out)
    : total_(std::max<int64_t>(total_steps, 1)), out_(out), terminal_(isatty(fileno(out))) {}

void ProgressBar::Update(int64_t done, std::string_view label) {
  if (!terminal_ || finished_) return;
  const Clock::time_point now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed <= kShowAfterS) return;
  if (std::chrono::duration<double>(now - last_draw_).count() < kRedrawEveryS) return;
  const std::string text = label.empty()
                               ? "step " + std::to_string(done) + "/" + std::to_string(total_)
                               : std::string(label);
  std::string line = FormatProgress(static_cast<double>(done) / total_, text, elapsed);
  const size_t chars = line.size();
  if (chars < drawn_chars_) line += std::string(drawn_chars_ - chars, ' ');  // erase the rest
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
  drawn_chars_ = chars;
  last_draw_ = now;
}

void ProgressBar::Clear() {
  if (!drawn_chars_) return;
  std::fprintf(out_, "\r%s\r", std::string(drawn_chars_, ' ').c_str());
  std::fflush(out_);
  drawn_chars_ = 0;
}

void ProgressBar::Finish() {
  Clear();
  finished_ = true;
}

}  // namespace tpusim::driver
