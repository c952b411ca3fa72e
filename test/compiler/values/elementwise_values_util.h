// Runs an HLO module compiled for v3-8 in the simulator on arguments the test chooses (edge
// values: zeros, ties, NaN, inf) and returns core 0's results beside the evaluator's, element
// by element, for checks in ulps or bit for bit. One simulation per call.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/eval/evaluator.h"
#include "driver/board_target.h"
#include "driver/run_values.h"
#include "driver/step_check.h"
#include "isa/assembler.h"
#include "isa/bf16.h"
#include "sim/config.h"
#include "sim/simulation.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim::testing {

struct ElementwiseRun {
  bool exact = false;                  // every kernel computes values
  std::string inexact_ops;             // the ops that do not
  std::vector<eval::Value> got, want;  // per result: simulated (core 0) and reference
};

inline std::vector<uint8_t> EncodeArgument(const eval::Value& v) {
  return driver::EncodeElements(v, 0, v.size());
}

// `hlo` must be replicated (replica_count=8): every core computes the whole result.
inline ElementwiseRun RunWithArguments(const std::string& hlo,
                                       const std::vector<eval::Value>& args) {
  ElementwiseRun out;
  const sim::BoardConfig board = sim::LoadConfig("v3-8");
  const auto compiled = CompileForValues(hlo, board, out.exact, out.inexact_ops);
  if (!compiled || !out.exact) return out;
  const CompiledModule& c = *compiled;
  sim::Simulation simulation(board, sim::RunOptions{.functional = true});
  if (!AddPrograms(c, simulation)) return out;
  const auto params = c.original.entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const passes::BufferInfo* buf = c.report.memory.Find(params[i]->name());
    if (!buf) continue;
    const std::vector<uint8_t> bytes = EncodeArgument(args[i]);
    for (size_t core = 0; core < c.lowered.programs.size(); ++core)
      simulation.core(static_cast<int>(core))
          .hbm()
          .Write(static_cast<uint64_t>(buf->offset), bytes.data(), bytes.size());
  }
  sim::RunReport r = simulation.Run();
  EXPECT_TRUE(r.ok) << r.error;
  auto want = eval::Evaluate(c.original, args);
  if (!want.ok()) {
    ADD_FAILURE() << want.status().message();
    return out;
  }
  out.want = *want;
  for (size_t o = 0; o < out.want.size(); ++o) {
    eval::Value got = out.want[o];
    const int64_t n = got.size(), width = driver::ElementBytes(got.shape.type);
    std::vector<uint8_t> bytes(static_cast<size_t>(n * width));
    simulation.core(0).hbm().Read(c.lowered.outputs.at(o).address, bytes.data(), bytes.size());
    for (int64_t i = 0; i < n; ++i)
      got.data[static_cast<size_t>(i)] = driver::Decode(got.shape.type, bytes.data(), i);
    out.got.push_back(std::move(got));
  }
  return out;
}

// Distance in f32 units in the last place (0 for equal values and for two NaNs; a sign
// difference of zeros counts one).
inline int64_t UlpDistance(double a, double b) {
  const float x = static_cast<float>(a), y = static_cast<float>(b);
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) ? 0 : INT64_MAX;
  auto ordered = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) - 1 : static_cast<int64_t>(i);
  };
  return std::llabs(ordered(x) - ordered(y));
}

// rows x 128 values (one f32[8,128] by default): `edges` first, then `spread(i)`.
template <typename F>
inline eval::Value Values(hlo::PrimitiveType t, std::vector<double> edges, F spread, int rows = 8) {
  for (int i = static_cast<int>(edges.size()); i < rows * 128; ++i) edges.push_back(spread(i));
  return eval::Value::FromVector(t, {rows, 128}, edges);
}

// A pseudo-random double in [0, 1) from i (a fixed hash: the same on every run).
inline double Unit(int i, uint32_t salt) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ salt;
  h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
  return h / 4294967296.0;
}

// Every element of every result equal to the evaluator's (NaN to NaN, zeros by sign;
// integers exactly, not through f32).
inline void ExpectBitExact(const ElementwiseRun& r, const std::vector<eval::Value>& args) {
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  ASSERT_EQ(r.got.size(), r.want.size());
  for (size_t o = 0; o < r.want.size(); ++o)
    for (size_t i = 0; i < r.want[o].data.size(); ++i)
      ASSERT_TRUE(hlo::IsIntegralType(r.want[o].shape.type)
                      ? r.got[o].data[i] == r.want[o].data[i]
                      : UlpDistance(r.got[o].data[i], r.want[o].data[i]) == 0)
          << "result " << o << " element " << i << " of argument " << args[0].data[i]
          << (args.size() > 1 ? ", " + std::to_string(args[1].data[i]) : "") << ": simulated "
          << r.got[o].data[i] << ", evaluator " << r.want[o].data[i];
}

}  // namespace tpusim::testing
