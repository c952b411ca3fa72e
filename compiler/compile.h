// The compiler's entry point for a board: parse and verify HLO text, run the pass pipeline
// (passes/pipeline.h) and lower the optimized module to one ISA program per core
// (lowering/driver/lower.h). Compilations are cached by module text and target, as a TPU runtime
// caches executables by program and shapes: a new shape compiles anew.
#pragma once

#include <memory>
#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"
#include "compiler/hlo_pipeline.h"
#include "compiler/lowering/driver/lower.h"

namespace tpusim {

struct CompileTarget {
  lowering::LowerOptions lowering;  // cores, MXUs, ring, infeed
  int64_t hbm_bytes_per_core = passes::kDefaultHbmBytes;
  std::string dump_dir;  // IR after each pass; empty: none
  // false: always compile and keep nothing (benchmarks of the compiler itself, the fuzzer,
  // whose memory would otherwise grow with every input).
  bool use_cache = true;
};

struct CompiledModule {
  hlo::HloModule original;   // as parsed (the reference evaluator runs this)
  hlo::HloModule optimized;  // after the pass pipeline
  CompileReport report;
  lowering::LoweredModule lowered;
  double compile_ms = 0;
};

// `name` is the file name errors cite. Repeated calls with the same text and target return
// the cached result.
hlo::Result<std::shared_ptr<const CompiledModule>> CompileForBoard(const std::string& hlo_text,
                                                                   const std::string& name,
                                                                   const CompileTarget& target);

// The pass pipeline's options for `target`: its HBM, cores and the board the scheduler
// estimates times on.
CompileOptions CompileOptionsFor(const CompileTarget& target);

// Compilations done by this process (cache misses).
int CompilationCount();

}  // namespace tpusim
