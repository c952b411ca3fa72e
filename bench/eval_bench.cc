// The host reference evaluator's own cost: one training step of a shipped model evaluated
// on every replica (EvaluateReplicated, one thread each) with seeded inputs, as
// `tpusim run` checks simulated values against it. Reports host seconds per step; no
// simulated hardware is involved.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/read_module.h"
#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"

namespace tpusim::bench {
namespace {

// Seeded arguments: floats uniform in [-1, 1), integers (labels) in [0, 8).
std::vector<eval::Value> SeededArgs(const hlo::HloModule& module) {
  std::vector<eval::Value> args;
  uint64_t seed = 1;
  for (const hlo::HloInstruction* p : module.entry()->parameters()) {
    eval::Value v = eval::Value::Random(p->shape(), seed++);
    if (p->shape().IsArray() && p->shape().type == hlo::PrimitiveType::kS32)
      for (double& x : v.data) x = std::fmod(x, 8.0);
    args.push_back(std::move(v));
  }
  return args;
}

void BM_EvalStep(benchmark::State& state, const std::string& path) {
  const std::string text = ReadModule(path);
  if (text.empty()) return state.SkipWithError(("cannot read " + path).c_str());
  auto module = hlo::ParseHlo(text, path);
  if (!module.ok()) return state.SkipWithError(module.status().message().c_str());
  const int64_t replicas = std::max<int64_t>(1, module->replica_count);
  const std::vector<std::vector<eval::Value>> args(static_cast<size_t>(replicas),
                                                   SeededArgs(*module));
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto result = eval::EvaluateReplicated(*module, args);
    const double host_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) return state.SkipWithError(result.status().message().c_str());
    state.counters["host_s_per_step"] = host_s;
    state.counters["replicas"] = static_cast<double>(replicas);
  }
}

const bool kRegistered = [] {
  benchmark::RegisterBenchmark("BM_EvalStep/mnist-cnn", BM_EvalStep,
                               std::string("examples/models/mnist-cnn.hlo"))
      ->Iterations(1)
      ->Unit(benchmark::kSecond);
  return true;
}();

}  // namespace
}  // namespace tpusim::bench
