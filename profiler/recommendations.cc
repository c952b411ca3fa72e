#include "profiler/recommendations.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace tpusim::profiler {
namespace {

std::string F1(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

// Three significant digits: 2.03 ms, 0.0144 ms.
std::string Ms(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  return buf;
}

std::string GiB(uint64_t bytes) { return F1(static_cast<double>(bytes) / (1ull << 30)) + " GiB"; }

// Average time per core and step of the op named `name` in the op profile (0 if absent).
double OpStepMs(const std::vector<OpProfileEntry>& ops, const std::string& name, const Metrics& m,
                const RunContext& ctx) {
  for (const OpProfileEntry& op : ops)
    if (op.name == name)
      return op.time_ms / std::max<double>(1, static_cast<double>(m.per_core.size())) /
             std::max(1, ctx.steps);
  return 0;
}

// "convolution 43.4%, fusion 20.9%, ...": op time by kind (the name before its first '.',
// as XLA names ops), the `most` largest kinds, as a share of all op time.
std::string TimeByKind(const std::vector<OpProfileEntry>& ops, size_t most) {
  std::map<std::string, double> by_kind;
  double total = 0;
  for (const OpProfileEntry& op : ops) {
    by_kind[op.name.substr(0, op.name.find('.'))] += op.time_ms;
    total += op.time_ms;
  }
  std::vector<std::pair<std::string, double>> kinds(by_kind.begin(), by_kind.end());
  std::stable_sort(kinds.begin(), kinds.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (size_t i = 0; i < kinds.size() && i < most; ++i)
    text += (i ? ", " : "") + kinds[i].first + " " + F1(Percent(kinds[i].second, total)) + "%";
  return text;
}

}  // namespace

std::vector<Recommendation> Recommend(const Metrics& m, const RunContext& ctx,
                                      const HardwarePeaks& peaks,
                                      const std::vector<OpProfileEntry>& ops) {
  std::vector<Recommendation> out;
  const RecommendationThresholds& t = ctx.thresholds;
  const StepBreakdown& b = m.step_breakdown;

  const double infeed = Percent(b.infeed_ms, b.step_ms);
  if (b.step_ms > 0 && infeed > t.input_bound_percent) {
    out.push_back({"input_bound",
                   "Your program is input-bound: " + F1(infeed) +
                       "% of the step time waits for infeed. Speed up the host input pipeline "
                       "(prefetch, parallel reads, caching) or move preprocessing to the TPU.",
                   infeed, "%", infeed});
  }
  if (b.step_ms > 0 && infeed <= t.input_bound_percent && !ops.empty()) {
    // XProf's overview says this when the input pipeline keeps up; the share at stake is
    // not one lever's, so it ranks after every time-based recommendation.
    out.push_back({"not_input_bound",
                   "Your program is NOT input-bound: only " + F1(infeed) +
                       "% of the step time waits for infeed, so focus on the device time. By op "
                       "kind: " +
                       TimeByKind(ops, 4) + " of the op time (--summary lists every op).",
                   infeed, "%", 0});
  }
  // A layer's MXU rows are the examples, or all their positions (tokens, pixels).
  const int64_t rows = ctx.batch_per_core ? *ctx.batch_per_core * ctx.rows_per_example : 0;
  if (ctx.batch_per_core && rows < t.batch_per_core) {
    const double lost =
        100.0 * (1.0 - static_cast<double>(rows) / static_cast<double>(t.batch_per_core));
    const std::string what =
        ctx.rows_per_example > 1
            ? " (x " + std::to_string(ctx.rows_per_example) +
                  " positions: " + std::to_string(rows) + " MXU rows per layer), below " +
                  std::to_string(t.batch_per_core) + " rows per core that keep"
            : ", below " + std::to_string(t.batch_per_core) + " examples per core that keep";
    out.push_back(
        {"small_batch",
         "The batch per core is " + std::to_string(*ctx.batch_per_core) + what +
             " the 128x128 MXU busy: about " + F1(lost) +
             "% of the MXU's rows go unused. Raise the global batch to " +
             std::to_string(std::max<int64_t>(1, t.batch_per_core / ctx.rows_per_example)) +
             " x the number of cores if it fits.",
         lost, "%", lost * Percent(b.compute_ms, b.step_ms) / 100});
  }
  for (const PaddingInfo& p : ctx.padding) {
    const double wf = Percent(p.padded_flops - p.useful_flops, p.padded_flops);
    const double wb =
        Percent(static_cast<double>(p.padded_bytes) - static_cast<double>(p.useful_bytes),
                static_cast<double>(p.padded_bytes));
    const double w = std::max(wf, wb);
    const double share = Percent(OpStepMs(ops, p.op, m, ctx), b.step_ms) * w / 100;
    if (w > t.padding_waste_percent && share >= t.padding_min_step_share_percent) {
      out.push_back({"padding_waste",
                     "Op " + p.op + " wastes " + F1(w) + "% of its work on padding (about " +
                         F1(share) +
                         "% of the step time). Make its dimensions multiples of 8 (batch) "
                         "and 128 (features) to match the TPU's (8,128) tiles.",
                     w, "%", share});
    }
  }
  const double all_reduce = Percent(b.all_reduce_ms, b.step_ms);
  if (b.step_ms > 0 && all_reduce > t.all_reduce_percent) {
    const std::string what =
        ctx.partitioned
            ? "The collectives take " + F1(all_reduce) + "% of the step time (" +
                  Ms(b.all_reduce_ms) +
                  "). A partitioned program gathers the weights it splits (FSDP) and sums "
                  "partial results (a contraction split over a model axis) besides the "
                  "gradients: the summary's op profile names each collective. "
            : "The cross-replica all-reduce takes " + F1(all_reduce) + "% of the step time (" +
                  Ms(b.all_reduce_ms) +
                  "). In a data-parallel training step it moves the gradients, whose size "
                  "does not grow with the batch: a larger batch per core amortizes it. ";
    out.push_back(
        {"all_reduce_bound",
         what + (ctx.collective_stream
                     ? "This is the time the cores wait for collectives: the all-reduces, "
                       "all-gathers and reduce-scatters already overlap the kernels "
                       "scheduled beside them (the trace's collective stream shows how "
                       "much)."
                     : "tpusim runs collectives in turn with the other ops; XLA on "
                       "a TPU overlaps part of a training step's all-reduce with the "
                       "backward pass, so a TPU shows less of it."),
         all_reduce, "%", all_reduce});
  }
  const double host = Percent(b.host_overhead_ms, b.step_ms);
  const bool few =
      !ctx.steps_per_execution || *ctx.steps_per_execution < t.suggested_steps_per_execution;
  if (b.step_ms > 0 && host > t.host_overhead_percent && few) {
    std::string spe = ctx.steps_per_execution
                          ? "steps_per_execution is " + std::to_string(*ctx.steps_per_execution)
                          : "steps_per_execution is not set";
    out.push_back({"host_overhead",
                   "Host dispatch overhead takes " + F1(host) + "% of the step time and " + spe +
                       ". Run several steps per host dispatch (steps_per_execution=" +
                       std::to_string(t.suggested_steps_per_execution) +
                       " took the TPU guide's MNIST CNN from 24 to 10 ms per step on a Colab TPU).",
                   host, "%", host});
  }
  const uint64_t cap = ctx.hbm_capacity_bytes_per_core.value_or(peaks.hbm_capacity_bytes_per_core);
  if (ctx.hbm_peak_bytes_per_core && cap > 0) {
    const uint64_t used = *ctx.hbm_peak_bytes_per_core;
    const double pct = Percent(static_cast<double>(used), static_cast<double>(cap));
    if (pct > t.hbm_high_percent) {
      out.push_back({"hbm_near_limit",
                     "Peak HBM use is " + GiB(used) + " of " + GiB(cap) + " per core (" + F1(pct) +
                         "%): little headroom; a larger batch or more padding may not fit.",
                     pct, "%"});
    } else if (pct < t.hbm_low_percent) {
      out.push_back({"hbm_headroom",
                     "Peak HBM use is only " + GiB(used) + " of " + GiB(cap) + " per core (" +
                         F1(pct) + "%): there is room for a larger batch per core.",
                     pct, "%"});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Recommendation& a, const Recommendation& b) {
    return a.step_share_percent > b.step_share_percent;
  });
  return out;
}

}  // namespace tpusim::profiler
