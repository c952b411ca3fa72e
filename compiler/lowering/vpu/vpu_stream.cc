#include "compiler/lowering/vpu/vpu_stream.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

// A slot holds one chunk of every streamed input and of the output, in areas of whole
// multiples of 128 vregs; two slots of 8 such units must fit in VMEM (16 MiB on v3). Fewer
// operands take larger chunks: each chunk's copies wait behind the DMA latency, and a
// longer chunk spreads that wait over more bytes (the same trade-off as a tile size).
constexpr int64_t kUnitVregs = 128;
constexpr int kSlotUnits = 8;  // 6 inputs + output, rounded up
constexpr int kInputPtr = 16;  // HBM pointers r16..r21 (outputs: kOutPtrs)
constexpr int kSplatFlag = 6;  // their copies' arrivals
constexpr int64_t kMinUnitVregs = 8;

constexpr int kMaxInputs = 6;

uint64_t VregBytes(const StreamOperand& o) { return o.elem_bytes >= 4 ? 4096 : 2048; }

// Bytes of `o` that one chunk of `chunk_vregs` (of `vregs`) moves, at least one row.
uint64_t ChunkBytes(const StreamOperand& o, int64_t chunk_vregs, int64_t vregs) {
  const uint64_t full = VregBytes(o) * chunk_vregs;
  const uint64_t share = (o.bytes * chunk_vregs + vregs - 1) / vregs;
  return std::max<uint64_t>(std::min(full, (share + 511) / 512 * 512), 512);
}

int Streamed(const VpuStream& st) {
  return static_cast<int>(std::count_if(st.inputs.begin(), st.inputs.end(),
                                        [](const StreamOperand& o) { return !o.splat; }));
}

int Outputs(const VpuStream& st) { return 1 + static_cast<int>(st.more_outputs.size()); }

// Output k: its operand, result vreg, HBM pointer and VMEM pointer registers.
const StreamOperand& Out(const VpuStream& st, int k) {
  return k == 0 ? st.output : st.more_outputs.at(static_cast<size_t>(k - 1));
}
int Result(const VpuStream& st, int k) {
  return k == 0 ? st.result : st.more_results.at(static_cast<size_t>(k - 1));
}
constexpr int kOutPtrs[] = {22, 23, 24};  // HBM
constexpr int kOutVmem[] = {13, 15, 25};  // VMEM

// The layout: a unit of kUnitVregs, or the largest power-of-two fraction of it whose two
// slots of kSlotUnits units fit `st.vmem_bytes`; chunks of whole units, short enough for 8
// chunks, so a smaller stream still overlaps its first copy in and last copy out with the
// VPU's work. A slot holds an area per streamed input and output, of the chunk's vregs (the
// whole stream's when shorter); the splat scalars follow the two slots. The kernel uses
// VMEM [0, splat_area + kMaxInputs vregs), which it reports (VpuStreamVmemBytes).
struct Layout {
  int64_t unit_vregs, chunk_vregs;
  uint64_t area, slot_bytes, splat_area;
};
Layout LayoutOf(const VpuStream& st) {
  int64_t unit = kUnitVregs;
  auto need = [](int64_t u) { return 2 * kSlotUnits * u * 4096 + kMaxInputs * 4096; };
  while (unit > kMinUnitVregs && need(unit) > st.vmem_bytes) unit /= 2;
  if (need(unit) > st.vmem_bytes)
    throw std::invalid_argument("the VPU stream kernel needs " + std::to_string(need(unit)) +
                                " bytes of VMEM");
  const int streams = Streamed(st) + Outputs(st);
  const int64_t longest = unit * (kSlotUnits / streams);
  const int64_t chunk = std::clamp<int64_t>(st.vregs / 8 / unit * unit, unit, longest);
  const uint64_t area =
      static_cast<uint64_t>(std::min(chunk, std::max<int64_t>(st.vregs, 1))) * 4096;
  const uint64_t slot = static_cast<uint64_t>(streams) * area;
  return {unit, chunk, area, slot, 2 * slot};
}

// One pass of `chunks` chunks of `chunk_vregs` each; areas of `area` bytes in a slot: the
// streamed inputs in order, then the output.
std::string Pass(const VpuStream& st, int64_t chunks, int64_t chunk_vregs, uint64_t area) {
  const int n = static_cast<int>(st.inputs.size());
  std::vector<uint64_t> at(n);  // each streamed input's area in a slot
  for (int i = 0, k = 0; i < n; ++i)
    if (!st.inputs[i].splat) at[i] = static_cast<uint64_t>(k++) * area;
  std::vector<uint64_t> in_chunk(n);
  for (int i = 0; i < n; ++i) in_chunk[i] = ChunkBytes(st.inputs[i], chunk_vregs, st.vregs);
  const int outs = Outputs(st);
  std::vector<uint64_t> out_chunk(outs), out_vmem(outs);  // each output's chunk and area
  for (int k = 0; k < outs; ++k) {
    out_chunk[k] = st.store_every_vreg ? ChunkBytes(Out(st, k), chunk_vregs, st.vregs) : 4096;
    out_vmem[k] = static_cast<uint64_t>(Streamed(st) + k) * area;
  }
  const uint64_t slot_bytes = LayoutOf(st).slot_bytes;
  std::ostringstream s;
  int streamed = 0;  // inputs copied per chunk (splat scalars are in their vregs already)
  for (int i = 0; i < n; ++i) {
    if (st.inputs[i].splat) continue;
    ++streamed;
    s << ".desc in" << i << " rows=1 row_bytes=" << in_chunk[i] << " src_stride=0 dst_stride=0\n";
  }
  for (int k = 0; k < outs; ++k)
    s << ".desc out" << k << " rows=1 row_bytes=" << out_chunk[k] << " src_stride=0 dst_stride=0\n";
  s << "    sflag f4, " << outs << "\n    sflag f5, " << outs << "\n    li r1, 0\n    li r2, "
    << chunks << "\n";
  auto load = [&](int slot) {  // chunk r1 (+1 when prefetching) into `slot`
    for (int i = 0; i < n; ++i)
      if (!st.inputs[i].splat)
        s << "    li r3, " << slot * slot_bytes + at[i] << "\n    dma.hv r3, r" << kInputPtr + i
          << ", in" << i << ", f" << slot << "\n    addi r" << kInputPtr + i << ", r"
          << kInputPtr + i << ", " << in_chunk[i] << "\n";
  };
  load(0);
  s << "pair:\n";
  for (int slot = 0; slot < 2; ++slot) {
    const std::string sl = std::to_string(slot);
    s << "    bge r1, r2, done\n    addi r14, r1, 1\n    bge r14, r2, nopf" << sl << "\n";
    load(1 - slot);
    s << "nopf" << sl << ":\n";
    if (streamed) s << "    wait vpu, f" << slot << ", " << streamed << "\n";
    s << "    wait vpu, f" << 4 + slot << ", " << outs << "\n";
    for (int i = 0; i < n; ++i)
      if (!st.inputs[i].splat)
        s << "    li r" << 7 + i << ", " << slot * slot_bytes + at[i] << "\n";
    for (int k = 0; k < outs; ++k)
      s << "    li r" << kOutVmem[k] << ", " << slot * slot_bytes + out_vmem[k] << "\n";
    // One hardware loop per chunk: each trip loads the next vreg of every full-size input
    // (smaller ones are re-read), runs the body and stores each result's next vreg.
    const size_t loop_len = streamed + st.body.size() + (st.store_every_vreg ? outs : 0);
    s << "    li r14, " << chunk_vregs << "\n    vloop r14, " << loop_len << "\n";
    for (int i = 0; i < n; ++i) {
      if (st.inputs[i].splat) continue;
      const bool full = st.inputs[i].bytes >= VregBytes(st.inputs[i]) * st.vregs;
      s << (st.inputs[i].elem_bytes >= 4 ? "    vlds v" : "    vlds.bf16 v") << i << ", r" << 7 + i
        << ", " << (full ? VregBytes(st.inputs[i]) : 0) << "\n";
    }
    for (const std::string& line : st.body) s << "    " << line << "\n";
    for (int k = 0; k < outs && st.store_every_vreg; ++k)
      s << (Out(st, k).elem_bytes >= 4 ? "    vsts v" : "    vsts.bf16 v") << Result(st, k) << ", r"
        << kOutVmem[k] << ", " << VregBytes(Out(st, k)) << "\n";
    if (!st.store_every_vreg)
      s << (st.output.elem_bytes >= 4 ? "    vst v" : "    vst.bf16 v") << st.result << ", r13\n";
    s << "    signal vpu, f" << 2 + slot << ", 1\n    wait dma, f" << 2 + slot << ", 1\n";
    for (int k = 0; k < outs; ++k)
      s << "    li r3, " << slot * slot_bytes + out_vmem[k] << "\n    dma.vh r" << kOutPtrs[k]
        << ", r3, out" << k << ", f" << 4 + slot << "\n    addi r" << kOutPtrs[k] << ", r"
        << kOutPtrs[k] << ", " << out_chunk[k] << "\n";
    s << "    addi r1, r1, 1\n";
  }
  s << "    jmp pair\ndone:\n";
  return s.str();
}

// Each splat scalar copied by DMA into all 1024 elements of a VMEM vreg, then into its
// input register, which the body only reads.
std::string Splats(const VpuStream& st) {
  const uint64_t splat_area = LayoutOf(st).splat_area;
  std::ostringstream s;
  int copies = 0;
  for (size_t i = 0; i < st.inputs.size(); ++i) {
    if (!st.inputs[i].splat) continue;
    if (!copies++)
      s << ".desc splat rows=" << kVregElements << " row_bytes=4 src_stride=0 dst_stride=4\n"
        << "    sflag f" << kSplatFlag << ", 0\n";
    s << "    li r3, " << splat_area + i * 4096 << "\n    dma.hv r3, r" << kInputPtr + i
      << ", splat, f" << kSplatFlag << "\n";
  }
  if (!copies) return "";
  s << "    wait vpu, f" << kSplatFlag << ", " << copies << "\n";
  for (size_t i = 0; i < st.inputs.size(); ++i)
    if (st.inputs[i].splat)
      s << "    li r3, " << splat_area + i * 4096 << "\n    vld v" << i << ", r3\n";
  return s.str();
}

}  // namespace

int64_t VpuStreamVmemBytes(const VpuStream& st) {
  return static_cast<int64_t>(LayoutOf(st).splat_area + kMaxInputs * 4096);
}

std::string VpuStreamKernel(const VpuStream& st) {
  if (st.inputs.size() > 6) throw std::invalid_argument("the VPU stream kernel takes <= 6 inputs");
  if (st.more_outputs.size() > 2 || st.more_outputs.size() != st.more_results.size() ||
      (!st.more_outputs.empty() && !st.store_every_vreg) || Streamed(st) + Outputs(st) > kSlotUnits)
    throw std::invalid_argument("the VPU stream kernel takes <= 3 outputs, and <= 8 streams");
  if (st.vregs <= 0) throw std::invalid_argument("empty VPU stream");
  std::ostringstream s;
  s << "# VPU stream: " << st.vregs << " vregs, " << st.inputs.size() << " input(s)\n.tag \""
    << st.tag << "\"\n";
  for (size_t i = 0; i < st.inputs.size(); ++i)
    s << assembly::LoadAddress(kInputPtr + static_cast<int>(i), st.inputs[i].address, 27);
  for (int k = 0; k < Outputs(st); ++k)
    s << assembly::LoadAddress(kOutPtrs[k], Out(st, k).address, 27);
  s << Splats(st);
  for (const std::string& line : st.prologue) s << "    " << line << "\n";
  const Layout layout = LayoutOf(st);
  const int64_t chunk = layout.chunk_vregs, full = st.vregs / chunk, rest = st.vregs % chunk;
  const uint64_t area = layout.area;
  if (full) s << assembly::ScopeKernel(Pass(st, full, chunk, area), "a_");
  if (full && rest) s << assembly::DrainBarrier(0);
  if (rest) s << assembly::ScopeKernel(Pass(st, 1, rest, area), "b_");
  return s.str();
}

std::string DmaCopyKernel(uint64_t src, uint64_t dst, uint64_t bytes, const std::string& tag) {
  constexpr uint64_t kChunk = 1 << 20;  // per DMA; engines overlap consecutive copies
  const uint64_t chunks = std::max<uint64_t>(1, (bytes + kChunk - 1) / kChunk);
  const uint64_t row = std::max<uint64_t>(512, std::min(bytes, kChunk) / 512 * 512);
  std::ostringstream s;
  s << "# copy " << bytes << " bytes HBM -> HBM\n.tag \"" << tag << "\"\n"
    << ".desc chunk rows=1 row_bytes=" << row << " src_stride=0 dst_stride=0\n"
    << assembly::LoadAddress(1, src, 27) << assembly::LoadAddress(2, dst, 27)
    << "    li r3, 0\n    li r4, " << chunks
    << "\nloop:\n    dma.hh r2, r1, chunk, f0\n    addi r1, r1, " << row << "\n    addi r2, r2, "
    << row << "\n    addi r3, r3, 1\n    blt r3, r4, loop\n    wait seq, f0, " << chunks << "\n";
  return s.str();
}

}  // namespace tpusim::lowering
