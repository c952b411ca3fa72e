// Plain-words advice, each item with the figure that triggered it. Inputs the simulator
// and compiler do not report yet come as optional fields of RunContext.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profiler/metrics.h"
#include "profiler/op_profile.h"

namespace tpusim::profiler {

// Padding the compiler added to one op (tile padding to (8,128) and the like).
struct PaddingInfo {
  std::string op;
  double padded_flops = 0;  // FLOPs executed, padding included
  double useful_flops = 0;
  uint64_t padded_bytes = 0;  // HBM bytes moved, padding included
  uint64_t useful_bytes = 0;
};

struct RecommendationThresholds {
  double input_bound_percent = 10;            // infeed share of step time
  int batch_per_core = 128;                   // rule of thumb for a busy 128x128 MXU
  double padding_waste_percent = 10;          // of an op's FLOPs or bytes
  double padding_min_step_share_percent = 1;  // of step time the padding costs, at least
  double host_overhead_percent = 10;          // of step time
  double all_reduce_percent = 10;             // of step time
  int suggested_steps_per_execution = 50;
  double hbm_high_percent = 90;  // close to out of memory
  double hbm_low_percent = 25;   // room for a larger batch
};

struct RunContext {
  std::string tpu_type = "TPU v3";
  std::optional<int> batch_per_core;
  // MXU rows per example in a layer (a token model's sequence length, an image's pixels;
  // 1 for [batch, features] inputs).
  int64_t rows_per_example = 1;
  std::optional<int> steps_per_execution;
  std::optional<uint64_t> hbm_peak_bytes_per_core;
  std::optional<uint64_t> hbm_capacity_bytes_per_core;  // else HardwarePeaks's
  std::optional<int> compilations;
  std::optional<int> replica_count;  // else the number of cores
  // An SPMD program (num_partitions > 1): its collectives also gather split weights and sum
  // partial results, not only a data-parallel step's gradients.
  bool partitioned = false;
  std::vector<PaddingInfo> padding;
  // HLO ops that are collectives (their op-profile time is the step's all-reduce share).
  std::vector<std::string> collective_ops;
  // The collectives ran on each core's collective stream, beside the kernels: the step's
  // all-reduce share is the main stream's waits for them, which the simulator reports.
  bool collective_stream = false;
  // Where each HLO op came from in the user's program, by op name (metadata).
  std::map<std::string, OpOrigin> op_origins;
  // FLOPs of each HLO op as XLA's cost analysis counts them, by op name, all cores, one
  // step (LoweredOp::model_flops); the op profile reports these (UseModelFlops).
  std::map<std::string, double> model_flops;
  // Ops whose kernels run on the MXUs: what they execute beyond their model FLOPs is padding
  // (tiles of 128, taps on padding and dilation holes), reported as padding waste.
  std::vector<std::string> mxu_ops;
  int steps = 1;
  RecommendationThresholds thresholds;
};

struct Recommendation {
  std::string id;  // input_bound, small_batch, padding_waste, host_overhead, hbm_*
  std::string text;
  double figure = 0;
  std::string unit;  // "%", "examples", ...
  // Share of the step time at stake, the ranking key (see Recommend); 0 for advice that
  // is not about time (HBM use).
  double step_share_percent = 0;
};

// Ranked by the share of step time at stake, largest first: infeed wait, host overhead,
// an op's time times its padding waste, the MXU rows a small batch leaves unused times
// the compute share; HBM advice last. `ops` is the op profile (op time per op).
std::vector<Recommendation> Recommend(const Metrics& m, const RunContext& ctx,
                                      const HardwarePeaks& peaks,
                                      const std::vector<OpProfileEntry>& ops);

}  // namespace tpusim::profiler
