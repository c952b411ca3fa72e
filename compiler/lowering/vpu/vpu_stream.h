// The streaming VPU kernel every elementwise, fused or reducing op is lowered to: operands
// flow HBM -> VMEM in chunks of 128 to 512 vregs (longer when fewer operands share a slot),
// double-buffered by DMA, the VPU runs the same instruction list on each vreg, and results
// (up to three: a multi-output loop fusion's) flow back to HBM. Values are exact when
// the body is (vpu_body.h) and every operand is full-size and tile-aligned or a splat
// scalar, which is copied once into every element of its input vreg.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::lowering {

inline constexpr int64_t kVregElements = 8 * 128;  // one f32[8,128] vector register

struct StreamOperand {
  uint64_t address = 0;  // HBM
  int elem_bytes = 4;    // 4: vld/vst (f32); 2 or less: vld.bf16/vst.bf16
  uint64_t bytes = 0;    // what the kernel moves for this operand, per core
  bool splat = false;    // a scalar (f32[]): read once and repeated over its whole vreg
};

struct VpuStream {
  std::vector<StreamOperand> inputs;  // loaded into v0, v1, ... before the body (at most 6)
  StreamOperand output;
  int64_t vregs = 0;                  // iterations of the body
  std::vector<std::string> prologue;  // once, before the loop (e.g. constants into v24..)
  std::vector<std::string> body;      // per vreg; the result is left in `result`
  int result = 0;                     // vreg the body leaves its result in
  // A multi-output loop fusion's other results (at most 2), each stored like `output`.
  std::vector<StreamOperand> more_outputs;
  std::vector<int> more_results;
  bool store_every_vreg = true;  // false: a reduction, stores once per chunk
  std::string tag;               // the HLO op
  // The VMEM the kernel may take from offset 0: below 8 MiB its slots shrink to fit (shorter
  // chunks), as beside an asynchronous all-reduce (OpContext::vmem_limit).
  int64_t vmem_bytes = int64_t{16} << 20;
};

// Assembly of the kernel (no halt; labels are local: wrap it with ScopeKernel).
// Throws std::invalid_argument on more than 6 inputs, more than 3 outputs, more streamed
// inputs and outputs than a slot holds (8), or an empty iteration space.
std::string VpuStreamKernel(const VpuStream& stream);

// The VMEM the kernel of `stream` uses at most: two slots and one vreg per splat input.
int64_t VpuStreamVmemBytes(const VpuStream& stream);

// A plain copy of `bytes` from HBM `src` to HBM `dst` by DMA in chunks (data movement ops).
std::string DmaCopyKernel(uint64_t src, uint64_t dst, uint64_t bytes, const std::string& tag);

}  // namespace tpusim::lowering
