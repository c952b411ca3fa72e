// Compiler speed: parse, verify, the pass pipeline and lowering to the 8 cores' programs,
// for model training steps built by the model zoo (no simulation).
#include <benchmark/benchmark.h>

#include "compiler/compile.h"
#include "compiler/model/models.h"
#include "driver/board_target.h"
#include "sim/config.h"

namespace tpusim {
namespace {

// `batch` 0: the model's default (ResNet-50: global batch 1024, 128 per core).
void BM_CompileTrainingStep(benchmark::State& state, const char* name, int64_t batch, bool bf16) {
  model::ModelOptions options;
  options.train = true;
  options.global_batch = batch;
  if (bf16) options.dtype = hlo::PrimitiveType::kBF16;
  const std::string text = model::BuildModel(*model::FindModel(name), options).hlo;
  CompileTarget target = driver::TargetFor(sim::LoadConfig("v3-8"));
  target.use_cache = false;
  size_t program_bytes = 0;
  for (auto _ : state) {
    auto compiled = CompileForBoard(text, name, target);
    if (!compiled.ok()) {
      state.SkipWithError(compiled.status().message().c_str());
      return;
    }
    program_bytes = compiled.value()->lowered.programs[0].size();
    benchmark::DoNotOptimize(program_bytes);
  }
  state.counters["hlo_bytes"] = static_cast<double>(text.size());
  state.counters["program_bytes_per_core"] = static_cast<double>(program_bytes);
}

BENCHMARK_CAPTURE(BM_CompileTrainingStep, resnet50, "resnet50", 0, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_CompileTrainingStep, resnet50_bf16, "resnet50", 0, true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_CompileTrainingStep, bert_base, "bert-base", 0, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_CompileTrainingStep, mnist_cnn, "mnist-cnn", 0, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace tpusim
