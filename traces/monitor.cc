#include "traces/monitor.h"

#include <algorithm>
#include <map>

#include "traces/json_util.h"

namespace tpusim::traces {
namespace {

using profiler::Series;
using profiler::TimeFs;

std::string Timestamp(TimeFs t) {
  const uint64_t us = t / 1'000'000'000;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%02llu:%02llu:%02llu.%06llu",
                static_cast<unsigned long long>(us / 3'600'000'000ull),
                static_cast<unsigned long long>(us / 60'000'000 % 60),
                static_cast<unsigned long long>(us / 1'000'000 % 60),
                static_cast<unsigned long long>(us % 1'000'000));
  return buf;
}

std::string Triple(double avg, double min, double max, const char* unit) {
  return Fixed(avg, 1) + unit + " (avg), " + Fixed(min, 1) + unit + " (min), " + Fixed(max, 1) +
         unit + " (max)";
}

}  // namespace

std::string FormatMonitor(const profiler::Recorder& rec, const profiler::RunContext& ctx,
                          TimeFs window_start, TimeFs window_end) {
  const int n = rec.num_cores();
  const double win = static_cast<double>(window_end > window_start ? window_end - window_start : 0);
  const int mxus = std::max(1, rec.options().mxus_per_core);
  const profiler::Timeline& tl = rec.timeline();
  double mxu = 0, idle = 0;
  double in_avg = 0, in_min = 0, in_max = 0;
  for (int c = 0; c < n; ++c) {
    const double m = tl.Within(c, Series::kMxuBusy, window_start, window_end);
    const double u = tl.Within(c, Series::kUnionBusy, window_start, window_end);
    const double f =
        win > 0 ? 100.0 * tl.Within(c, Series::kInfeed, window_start, window_end) / win : 0;
    mxu += win > 0 ? 100.0 * m / (mxus * win) / n : 0;
    idle += win > 0 ? (100.0 - 100.0 * u / win) / n : 0;
    in_avg += f / n;
    in_min = c == 0 ? f : std::min(in_min, f);
    in_max = c == 0 ? f : std::max(in_max, f);
  }
  // Board steps (first start to last end over the cores) that ended inside the window.
  std::map<uint32_t, std::pair<TimeFs, TimeFs>> steps;
  for (int c = 0; c < n; ++c) {
    for (const auto& [step, st] : rec.core(c).steps) {
      if (!st.reported()) continue;
      auto [it, fresh] = steps.emplace(step, std::make_pair(st.start, st.end));
      if (!fresh) {
        it->second.first = std::min(it->second.first, st.start);
        it->second.second = std::max(it->second.second, st.end);
      }
    }
  }
  double s_sum = 0, s_min = 0, s_max = 0;
  int count = 0;
  for (const auto& [step, se] : steps) {
    if (se.second <= window_start || se.second > window_end) continue;
    const double ms = static_cast<double>(se.second - se.first) / 1e12;
    s_min = count == 0 ? ms : std::min(s_min, ms);
    s_max = count == 0 ? ms : std::max(s_max, ms);
    s_sum += ms;
    ++count;
  }
  const int replicas = std::max(1, ctx.replica_count.value_or(n));
  std::string out;
  out += "Timestamp: " + Timestamp(window_end) + "\n";
  out += "TPU type: " + ctx.tpu_type + "\n";
  out += "Number of TPU cores: " + std::to_string(n) +
         " (Replica count = " + std::to_string(replicas) +
         ", num cores per replica = " + std::to_string(n / replicas) + ")\n";
  out += "Utilization of TPU Matrix Units (higher is better): " + Fixed(mxu, 1) + "%\n";
  out += "TPU idle time (lower is better): " + Fixed(idle, 1) + "%\n";
  out += "Step time: " + Triple(count ? s_sum / count : 0, s_min, s_max, "ms") + "\n";
  out += "Infeed percentage: " + Triple(in_avg, in_min, in_max, "%") + "\n";
  return out;
}

}  // namespace tpusim::traces
