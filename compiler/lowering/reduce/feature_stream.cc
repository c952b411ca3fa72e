#include "compiler/lowering/reduce/feature_stream.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

constexpr int64_t kVregBytes = 4096;
// A slot holds a chunk of each input and of the output in equal areas of whole units of
// kFeatureStreamChunkVregs vregs; fewer matrices take longer chunks (up to 4 units), which
// spread each copy's DMA latency over more bytes. Two slots of 8 units:
// kFeatureStreamVmemBytes.
constexpr int64_t kUnitBytes = kFeatureStreamChunkVregs * kVregBytes;
constexpr int64_t kSlotUnits = 8, kMostUnits = 4;
static_assert(2 * kSlotUnits * kUnitBytes == kFeatureStreamVmemBytes);
constexpr int64_t kSlotBytes = kSlotUnits * kUnitBytes;
constexpr int kInputHbm = 16, kOutHbm = 22;   // HBM pointers
constexpr int kInputVmem = 7, kOutVmem = 13;  // VMEM pointers of a vloop

// Loads the pattern and accumulator vregs of vreg j of the period into their registers, or
// (`store`) stores the accumulators back.
std::string Registers(const FeatureStream& st, int64_t j, bool store) {
  std::ostringstream s;
  const uint64_t at = static_cast<uint64_t>(j * kVregBytes);
  for (size_t k = 0; k < st.patterns.size() && !store; ++k)
    s << "    li r3, " << st.patterns[k] + at << "\n    vld v" << 24 + k << ", r3\n";
  for (size_t a = 0; a < st.accumulators.size(); ++a)
    s << "    li r3, " << st.accumulators[a] + at << "\n    " << (store ? "vst" : "vld") << " v"
      << FeatureStreamAccumulator(a) << ", r3\n";
  return s.str();
}

// Bytes of element of input `i` (4 or 2).
int InputBytes(const FeatureStream& st, size_t i) {
  return i < st.input_bytes.size() ? st.input_bytes[i] : 4;
}

// The chunk descriptor of a matrix of `width`-byte elements: "chunk" for f32, "chunk2" for
// bf16 (the VMEM areas keep the f32 size).
std::string ChunkDesc(int width) { return width == 4 ? "chunk" : "chunk2"; }

// The load or store of a vreg: widening from bf16 or rounding to it.
std::string Load(int width) { return width == 4 ? "vlds" : "vlds.bf16"; }
std::string Store(int width) { return width == 4 ? "vsts" : "vsts.bf16"; }

// `chunks` chunks of `chunk_vregs` vregs each, from the HBM pointers' current values.
// `area`: the bytes of each matrix's place in a slot (inputs in order, then the output).
// Whether the stream stores its body's result (a map, or sums that also store a matrix).
bool Stores(const FeatureStream& st) { return st.accumulators.empty() || st.sums_and_output; }

std::string Pass(const FeatureStream& st, int64_t chunks, int64_t chunk_vregs, int64_t area) {
  const bool map = Stores(st);
  const int n = static_cast<int>(st.inputs.size());
  const int64_t elements = chunk_vregs * 1024, step_elements = st.period * 1024;
  std::vector<int> widths;
  for (int i = 0; i < n; ++i) widths.push_back(InputBytes(st, static_cast<size_t>(i)));
  if (map) widths.push_back(st.output_bytes);
  std::ostringstream s;
  for (int width : {4, 2})
    if (std::find(widths.begin(), widths.end(), width) != widths.end())
      s << ".desc " << ChunkDesc(width) << " rows=1 row_bytes=" << elements * width
        << " src_stride=0 dst_stride=0\n";
  s << "    sflag f0, 0\n    sflag f1, 0\n    sflag f2, 0\n    sflag f3, 0\n"
    << "    sflag f4, 1\n    sflag f5, 1\n    li r1, 0\n    li r2, " << chunks << "\n";
  auto load = [&](int slot) {
    for (int i = 0; i < n; ++i)
      s << "    li r3, " << slot * kSlotBytes + i * area << "\n    dma.hv r3, r" << kInputHbm + i
        << ", " << ChunkDesc(widths[static_cast<size_t>(i)]) << ", f" << slot << "\n    addi r"
        << kInputHbm + i << ", r" << kInputHbm + i << ", "
        << elements * widths[static_cast<size_t>(i)] << "\n";
  };
  if (st.period == 1) s << Registers(st, 0, false);  // held over the whole pass
  load(0);
  s << "pair:\n";
  for (int slot = 0; slot < 2; ++slot) {
    const std::string sl = std::to_string(slot);
    const int64_t base = slot * kSlotBytes, out = base + n * area;
    s << "    bge r1, r2, done\n    addi r14, r1, 1\n    bge r14, r2, nopf" << sl << "\n";
    load(1 - slot);
    s << "nopf" << sl << ":\n    wait vpu, f" << slot << ", " << n << "\n";
    if (map) s << "    wait vpu, f" << 4 + slot << ", 1\n";
    for (int64_t j = 0; j < st.period; ++j) {  // the vregs of the chunk at j mod period
      const int64_t at = j * 1024;             // elements into the chunk
      if (st.period > 1) s << Registers(st, j, false);
      for (int i = 0; i < n; ++i)
        s << "    li r" << kInputVmem + i << ", "
          << base + i * area + at * widths[static_cast<size_t>(i)] << "\n";
      if (map) s << "    li r" << kOutVmem << ", " << out + at * st.output_bytes << "\n";
      s << "    li r14, " << chunk_vregs / st.period << "\n    vloop r14, "
        << n + st.body.size() + (map ? 1 : 0) << "\n";
      for (int i = 0; i < n; ++i)
        s << "    " << Load(widths[static_cast<size_t>(i)]) << " v" << i << ", r" << kInputVmem + i
          << ", " << step_elements * widths[static_cast<size_t>(i)] << "\n";
      for (const std::string& line : st.body) s << "    " << line << "\n";
      if (map)
        s << "    " << Store(st.output_bytes) << " v" << st.result << ", r" << kOutVmem << ", "
          << step_elements * st.output_bytes << "\n";
      if (st.period > 1) s << Registers(st, j, true);
    }
    // The slot's buffers are free for the next prefetch once the VPU is past this point.
    s << "    signal vpu, f" << 2 + slot << ", 1\n    wait dma, f" << 2 + slot << ", 1\n";
    if (map)
      s << "    li r3, " << out << "\n    dma.vh r" << kOutHbm << ", r3, "
        << ChunkDesc(st.output_bytes) << ", f" << 4 + slot << "\n    addi r" << kOutHbm << ", r"
        << kOutHbm << ", " << elements * st.output_bytes << "\n";
    s << "    addi r1, r1, 1\n";
  }
  s << "    jmp pair\ndone:\n";
  if (st.period == 1) s << Registers(st, 0, true);
  // The last results have landed once the VPU is past its last wait and the output credits
  // are back (f15: no kernel counts on it).
  s << "    sflag f15, 0\n    signal vpu, f15, 1\n    wait seq, f15, 1\n";
  if (map) s << "    wait seq, f4, 1\n    wait seq, f5, 1\n";
  return s.str();
}

}  // namespace

std::string FeatureStreamKernel(const FeatureStream& st) {
  if (st.inputs.empty() || st.inputs.size() > 4 || st.patterns.size() > 6 ||
      st.accumulators.size() > 3 || st.patterns.size() + st.accumulators.size() > 8 ||
      st.vregs <= 0 || st.period <= 0 || st.input_bytes.size() > st.inputs.size() ||
      (st.output_bytes != 4 && st.output_bytes != 2) ||
      std::any_of(st.input_bytes.begin(), st.input_bytes.end(),
                  [](int b) { return b != 4 && b != 2; }) ||
      kFeatureStreamChunkVregs % st.period || st.vregs % st.period)
    throw std::invalid_argument("feature stream: out of bounds");
  std::ostringstream s;
  s << "# feature stream: " << st.vregs << " vregs, period " << st.period << "\n.tag \"" << st.tag
    << "\"\n";
  for (size_t i = 0; i < st.inputs.size(); ++i)
    s << assembly::LoadAddress(kInputHbm + static_cast<int>(i), st.inputs[i], 27);
  if (Stores(st)) s << assembly::LoadAddress(kOutHbm, st.output, 27);
  s << "    vmovi v30, 0.0\n";
  for (uint64_t a : st.accumulators)
    for (int64_t j = 0; j < st.period; ++j)
      s << "    li r3, " << a + static_cast<uint64_t>(j * kVregBytes) << "\n    vst v30, r3\n";
  for (const std::string& line : st.prologue) s << "    " << line << "\n";
  const int64_t matrices = static_cast<int64_t>(st.inputs.size() + (Stores(st) ? 1 : 0));
  // The slot's units shared by the matrices, but at least 8 chunks when the stream allows
  // (so the first copy in and the last copy out overlap the VPU's work).
  const int64_t chunk = std::clamp<int64_t>(
      st.vregs / 8 / kFeatureStreamChunkVregs * kFeatureStreamChunkVregs, kFeatureStreamChunkVregs,
      kFeatureStreamChunkVregs * std::min(kMostUnits, kSlotUnits / matrices));
  const int64_t area = chunk * kVregBytes;
  const int64_t full = st.vregs / chunk, rest = st.vregs % chunk;
  if (full) s << assembly::ScopeKernel(Pass(st, full, chunk, area), "a_");
  if (rest) s << assembly::ScopeKernel(Pass(st, 1, rest, area), "b_");
  return s.str();
}

}  // namespace tpusim::lowering
