// A VPU stream over row-major [rows, features] f32 or bf16 matrices laid flat in vregs, for
// feature counts whose layout repeats with the vregs: one row fills `period` vregs
// (features = 1024 * period), or one vreg holds 1024 / features whole rows (period 1).
// Vreg k then has the feature pattern of vreg k mod period, so per-feature values are
// `period` pattern vregs loaded into registers, and per-feature sums are `period`
// accumulator vregs. Matrices move HBM <-> VMEM in contiguous chunks of 128 to 512 vregs
// (longer with fewer matrices), double-buffered; the chunks are a scalar loop and each
// chunk runs one `vloop` per vreg of the period, so the code does not grow with the rows.
// Batch norm's passes
// (batch_norm_kernel.h) run on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::lowering {

inline constexpr int64_t kFeatureStreamChunkVregs = 128;
// VMEM the kernel's buffers take, from address 0; the caller's pattern and accumulator
// areas sit above it.
inline constexpr uint64_t kFeatureStreamVmemBytes = 8 << 20;

struct FeatureStream {
  int64_t vregs = 0;             // of each matrix
  int64_t period = 1;            // vregs per repeat of the feature pattern; divides 128 and `vregs`
  std::vector<uint64_t> inputs;  // HBM matrices, into v0 .. v3 for each vreg (at most 4)
  // Bytes per element of each input: 4 (f32), or 2 (bf16, widened to f32 by the load);
  // empty: all 4. The output's likewise (bf16: rounded to nearest even by the store).
  std::vector<int> input_bytes;
  int output_bytes = 4;
  // VMEM, `period` vregs each: into v24.. (at most 6; at most 5 with three accumulators)
  std::vector<uint64_t> patterns;
  // VMEM, `period` vregs each, zeroed first: v30, v31, then v29 while a vloop runs (at most
  // 3: FeatureStreamAccumulator); the body accumulates into them.
  std::vector<uint64_t> accumulators;
  std::vector<std::string> prologue, body;  // v6..v23 are free temps
  int result = 0;                           // the body's result, stored per vreg...
  uint64_t output = 0;                      // ... to this HBM matrix, unless `accumulators`
  bool sums_and_output = false;             // ... or with them, when this is set
  std::string tag;
};

// The register accumulator `k` lives in while a vloop runs: v30, v31, v29.
inline int FeatureStreamAccumulator(size_t k) { return k < 2 ? 30 + static_cast<int>(k) : 29; }

// Assembly of the kernel (labels local: wrap it with ScopeKernel); it ends once its
// results are in HBM (or VMEM). Throws std::invalid_argument outside the bounds above.
std::string FeatureStreamKernel(const FeatureStream& st);

}  // namespace tpusim::lowering
