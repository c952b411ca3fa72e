#include "compiler/collectives/ring_allreduce.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace tpusim::collectives {
namespace {

constexpr uint64_t kVreg = 4096;
constexpr uint64_t kVmemSpace = 1;  // global address space of VMEM (sim/address_map.h)

// Flags of the program (sync flags are per core; each is used for one purpose).
constexpr int kInput = 0;      // the array arrived in VMEM
constexpr int kReceived = 1;   // a reduce-scatter chunk from the previous core arrived
constexpr int kAdded = 2;      // the VPU finished a step's reduction
constexpr int kGathered = 3;   // an all-gather chunk from the previous core arrived
constexpr int kLocalCopy = 4;  // this core's own reduced chunk is in the output
constexpr int kStored = 5;     // a segment's result is back in HBM

// Arrays above kSegmentBytes are reduced a segment at a time; consecutive segments use
// alternate VMEM buffer sets, so a segment's late copies never meet the next one's data.
constexpr uint64_t kSegmentBytes = 2 << 20;
constexpr uint64_t kSingleSegmentBytes = 4 << 20;
constexpr uint64_t kSetBytes = 6 << 20;

uint64_t Mod(int64_t a, int64_t n) { return static_cast<uint64_t>(((a % n) + n) % n); }

}  // namespace

std::vector<int> TorusRing(int torus_x, int torus_y, int cores_per_chip) {
  std::vector<int> chips;  // snake: along x on even rows, back on odd rows, then up y
  for (int y = 0; y < torus_y; ++y)
    for (int i = 0; i < torus_x; ++i) chips.push_back(y * torus_x + (y % 2 ? torus_x - 1 - i : i));
  std::vector<int> ring;
  for (int c : chips)
    for (int k = 0; k < cores_per_chip; ++k) ring.push_back(c * cores_per_chip + k);
  return ring;
}

std::string RingAllReduceProgram(const RingAllReduceSpec& spec, int position) {
  const int64_t n = static_cast<int64_t>(spec.ring.size());
  if (n < 2) throw std::invalid_argument("a ring all-reduce needs at least 2 cores");
  if (position < 0 || position >= n) throw std::invalid_argument("position outside the ring");
  if (spec.hbm_address + spec.bytes > 0x7fffffffull)
    throw std::invalid_argument("the array must lie in the first 2 GiB of HBM");
  // One segment up to 4 MiB (one buffer set fits VMEM); beyond, 2 MiB segments.
  const uint64_t seg = spec.bytes <= kSingleSegmentBytes ? spec.bytes : kSegmentBytes;
  if (spec.bytes == 0 || seg % (kVreg * n) || spec.bytes % seg)
    throw std::invalid_argument("all-reduce size must be a positive multiple of 4096 x " +
                                std::to_string(n) + " bytes, and of 2 MiB above 4 MiB");
  const uint64_t c = seg / n, segments = spec.bytes / seg;
  const uint64_t data = 0, slots = seg, out = seg + (n - 1) * c;  // VMEM layout of a set
  const int next = spec.ring[Mod(position + 1, n)];
  const char* reduce = spec.op == ReduceOp::kSum ? "vadd" : "vmax";
  std::ostringstream s;
  // VMEM address `off` of this segment's buffer set into register r, optionally global.
  auto vmem = [&](int r, uint64_t off, const char* global) {
    s << "    li r" << r << ", " << off << "\n    add r" << r << ", r" << r << ", r29\n";
    if (global) s << "    or r" << r << ", r" << r << ", " << global << "\n";
  };
  s << "# ring all-reduce (" << (spec.op == ReduceOp::kSum ? "sum" : "max") << ") of " << spec.bytes
    << " bytes over " << n << " cores in " << segments << " segment(s); ring "
    << "position " << position << "\n"
    << ".desc chunk rows=1 row_bytes=" << c << " src_stride=0 dst_stride=0\n"
    << ".desc segment rows=1 row_bytes=" << seg << " src_stride=0 dst_stride=0\n"
    << ".tag \"" << spec.tag << "\"\n";
  // r20 / r22: VMEM base of the next / this core as global addresses.
  s << "    li r21, " << kVmemSpace << "\n    shli r21, r21, 48\n"
    << "    li r20, " << next << "\n    shli r20, r20, 56\n    or r20, r20, r21\n"
    << "    li r22, " << spec.ring[position] << "\n    shli r22, r22, 56\n    or r22, r22, r21\n"
    << "    li r28, 0\n    li r27, " << segments << "\n"  // r28 segment, r27 count
    << "segment:\n"
    << "    andi r29, r28, 1\n    muli r29, r29, " << kSetBytes << "\n"  // buffer set
    << "    muli r30, r28, " << seg << "\n    addi r30, r30, " << spec.hbm_address << "\n";
  vmem(1, data, nullptr);
  s << "    dma.hv r1, r30, segment, f" << kInput << "\n    wait seq, f" << kInput << ", 1\n";
  // Reduce-scatter: step st sends chunk (p - st) and folds in chunk (p - 1 - st).
  for (int64_t st = 0; st < n - 1; ++st) {
    uint64_t send = Mod(position - st, n), fold = Mod(position - 1 - st, n);
    if (st > 0) s << "    wait dma, f" << kAdded << ", 1\n";
    vmem(3, data + send * c, "r22");
    vmem(4, slots + st * c, "r20");
    s << "    dma.g r4, r3, chunk, f" << kReceived << "\n";
    s << "    wait vpu, f" << kReceived << ", 1\n";
    vmem(5, slots + st * c, nullptr);
    vmem(6, data + fold * c, nullptr);
    vmem(7, data + (fold + 1) * c, nullptr);
    s << "add" << st << ":\n"
      << "    vld v0, r5\n    vld v1, r6\n    " << reduce << " v1, v1, v0\n    vst v1, r6\n"
      << "    addi r5, r5, 4096\n    addi r6, r6, 4096\n    blt r6, r7, add" << st << "\n"
      << "    signal vpu, f" << kAdded << ", 1\n";
  }
  // All-gather: step st sends chunk (p + 1 - st) into the next core's output.
  const uint64_t mine = Mod(position + 1, n);
  s << "    wait dma, f" << kAdded << ", 1\n";
  vmem(3, data + mine * c, nullptr);
  vmem(4, out + mine * c, nullptr);
  s << "    dma.vv r4, r3, chunk, f" << kLocalCopy << "\n";
  for (int64_t st = 0; st < n - 1; ++st) {
    uint64_t k = Mod(position + 1 - st, n);
    if (st > 0) s << "    wait dma, f" << kGathered << ", 1\n";
    vmem(3, st == 0 ? data + k * c : out + k * c, "r22");
    vmem(4, out + k * c, "r20");
    s << "    dma.g r4, r3, chunk, f" << kGathered << "\n";
  }
  s << "    wait dma, f" << kGathered << ", 1\n    wait dma, f" << kLocalCopy << ", 1\n";
  vmem(2, out, nullptr);
  s << "    dma.vh r30, r2, segment, f" << kStored << "\n"
    << "    addi r28, r28, 1\n    blt r28, r27, segment\n    halt\n";
  return s.str();
}

}  // namespace tpusim::collectives
