#include "compiler/collectives/ring_allreduce.h"

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
  if (spec.hbm_address > 0x7fffffff) throw std::invalid_argument("HBM address beyond 2 GiB");
  if (spec.bytes == 0 || spec.bytes % (kVreg * n) || spec.bytes > kMaxVmemBytes)
    throw std::invalid_argument("all-reduce size must be a positive multiple of 4096 x " +
                                std::to_string(n) + " bytes, at most 4 MiB");
  const uint64_t b = spec.bytes, c = b / n;
  const uint64_t data = 0, slots = b, out = b + (n - 1) * c;  // VMEM layout
  const int next = spec.ring[Mod(position + 1, n)];
  const char* reduce = spec.op == ReduceOp::kSum ? "vadd" : "vmax";
  std::ostringstream s;
  s << "# ring all-reduce (" << (spec.op == ReduceOp::kSum ? "sum" : "max") << ") of " << b
    << " bytes over " << n << " cores; this is ring position " << position << "\n"
    << ".desc chunk rows=1 row_bytes=" << c << " src_stride=0 dst_stride=0\n"
    << ".desc whole rows=1 row_bytes=" << b << " src_stride=0 dst_stride=0\n"
    << ".tag \"" << spec.tag << "\"\n";
  // r20 / r22: VMEM base of the next / this core as global addresses.
  s << "    li r21, " << kVmemSpace << "\n    shli r21, r21, 48\n"
    << "    li r20, " << next << "\n    shli r20, r20, 56\n    or r20, r20, r21\n"
    << "    li r22, " << spec.ring[position] << "\n    shli r22, r22, 56\n    or r22, r22, r21\n";
  s << "    li r1, " << data << "\n    li r2, " << spec.hbm_address << "\n"
    << "    dma.hv r1, r2, whole, f" << kInput << "\n    wait seq, f" << kInput << ", 1\n";
  // Reduce-scatter: step st sends chunk (p - st) and folds in chunk (p - 1 - st).
  for (int64_t st = 0; st < n - 1; ++st) {
    uint64_t send = Mod(position - st, n), fold = Mod(position - 1 - st, n);
    if (st > 0) s << "    wait dma, f" << kAdded << ", 1\n";
    s << "    li r3, " << data + send * c << "\n    or r3, r3, r22\n"
      << "    li r4, " << slots + st * c << "\n    or r4, r4, r20\n"
      << "    dma.g r4, r3, chunk, f" << kReceived << "\n";
    s << "    wait vpu, f" << kReceived << ", 1\n"
      << "    li r5, " << slots + st * c << "\n    li r6, " << data + fold * c << "\n"
      << "    li r7, " << data + (fold + 1) * c << "\nadd" << st << ":\n"
      << "    vld v0, r5\n    vld v1, r6\n    " << reduce << " v1, v1, v0\n    vst v1, r6\n"
      << "    addi r5, r5, 4096\n    addi r6, r6, 4096\n    blt r6, r7, add" << st << "\n"
      << "    signal vpu, f" << kAdded << ", 1\n";
  }
  // All-gather: step st sends chunk (p + 1 - st) into the next core's output.
  const uint64_t mine = Mod(position + 1, n);
  s << "    wait dma, f" << kAdded << ", 1\n"
    << "    li r3, " << data + mine * c << "\n    li r4, " << out + mine * c << "\n"
    << "    dma.vv r4, r3, chunk, f" << kLocalCopy << "\n";
  for (int64_t st = 0; st < n - 1; ++st) {
    uint64_t k = Mod(position + 1 - st, n);
    uint64_t from = st == 0 ? data + k * c : out + k * c;
    if (st > 0) s << "    wait dma, f" << kGathered << ", 1\n";
    s << "    li r3, " << from << "\n    or r3, r3, r22\n"
      << "    li r4, " << out + k * c << "\n    or r4, r4, r20\n"
      << "    dma.g r4, r3, chunk, f" << kGathered << "\n";
  }
  s << "    wait dma, f" << kGathered << ", 1\n    wait dma, f" << kLocalCopy << ", 1\n"
    << "    li r1, " << spec.hbm_address << "\n    li r2, " << out << "\n"
    << "    dma.vh r1, r2, whole, f" << kInput << "\n    halt\n";
  return s.str();
}

}  // namespace tpusim::collectives
