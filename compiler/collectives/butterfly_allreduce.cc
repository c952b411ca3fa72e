// The butterfly all-reduce; see butterfly_allreduce.h.
#include "compiler/collectives/butterfly_allreduce.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "compiler/assembly/asm_util.h"

namespace tpusim::collectives {
namespace {

constexpr uint64_t kVreg = kRingVregBytes;
constexpr uint64_t kVmemSpace = 1;  // global address space of VMEM (sim/address_map.h)

uint64_t Padded(uint64_t bytes) { return (bytes + kVreg - 1) / kVreg * kVreg; }

// Each round's arrivals count on a flag of their own (a later round's partner may send
// first): the ring's flags that the butterfly leaves free.
constexpr int kRoundFlags[] = {kFlagReceived, kFlagGathered, kFlagLocalCopy};
constexpr int kMaxRounds = 3;

// log2(members), or -1 when members is not a power of two up to 2^kMaxRounds.
int Rounds(int members) {
  for (int r = 1; r <= kMaxRounds; ++r)
    if ((1 << r) == members) return r;
  return -1;
}

}  // namespace

bool TakesButterfly(int members, uint64_t bytes) {
  return Rounds(members) > 0 && bytes > 0 && bytes % 4 == 0 && Padded(bytes) <= kButterflyMaxBytes;
}

uint64_t ButterflyVmemBytes(int members, uint64_t bytes) {
  return static_cast<uint64_t>(2 * Rounds(members) + 1) * Padded(bytes);
}

std::string ButterflyAllReduceProgram(const RingAllReduceSpec& spec, int position) {
  const int n = static_cast<int>(spec.ring.size());
  const int rounds = Rounds(n);
  if (rounds <= 0 || position < 0 || position >= n || spec.bidirectional)
    throw std::invalid_argument("a butterfly all-reduce needs 2, 4 or 8 members");
  std::vector<RingPiece> pieces = spec.pieces;
  if (pieces.empty()) {
    const uint64_t valid = spec.valid_bytes ? spec.valid_bytes : spec.bytes;
    pieces.push_back({spec.hbm_address, valid, spec.hbm_output.value_or(spec.hbm_address)});
  }
  uint64_t valid = 0;
  for (const RingPiece& p : pieces) {
    if (p.bytes == 0 || p.bytes % 4 || p.input % 4 || (p.output && *p.output % 4))
      throw std::invalid_argument("all-reduce pieces must be non-empty and 4-byte aligned");
    valid += p.bytes;
  }
  const uint64_t size = Padded(valid);
  if (size > kButterflyMaxBytes)
    throw std::invalid_argument("a butterfly all-reduce takes up to " +
                                std::to_string(kButterflyMaxBytes) + " bytes");
  std::vector<int> order = spec.ring;  // members in core order: round r pairs bit r
  std::sort(order.begin(), order.end());
  const int self = spec.ring[static_cast<size_t>(position)];
  const int index = static_cast<int>(std::find(order.begin(), order.end(), self) - order.begin());
  // VMEM: partial results 0..rounds, then one receive slot per round.
  auto partial = [&](int r) { return spec.vmem_base + static_cast<uint64_t>(r) * size; };
  auto slot = [&](int r) { return spec.vmem_base + static_cast<uint64_t>(rounds + 1 + r) * size; };
  const int f = spec.flag_base;
  std::ostringstream s;
  s << "# butterfly all-reduce (" << ReduceOpName(spec.op) << ") of " << pieces.size()
    << " buffer(s), " << valid << " bytes padded to " << size << ", over " << n << " cores in "
    << rounds << " rounds; core " << self << "\n"
    << ".desc whole rows=1 row_bytes=" << size << " src_stride=0 dst_stride=0\n";
  for (size_t i = 0; i < pieces.size(); ++i)
    s << ".desc part" << i << " rows=1 row_bytes=" << pieces[i].bytes
      << " src_stride=0 dst_stride=0\n";
  s << ".tag \"" << spec.tag << "\"\n";
  std::vector<int> partners;
  for (int r = 0; r < rounds; ++r) partners.push_back(order[static_cast<size_t>(index ^ (1 << r))]);
  if (spec.mailbox)  // each partner writes into this core, and it into each of them
    EmitEntry(s, self, *spec.mailbox, partners, rounds);
  // r21: VMEM's space bits; r22: this core's VMEM as a global address.
  s << "    li r21, " << kVmemSpace << "\n    shli r21, r21, 48\n    li r22, " << self
    << "\n    shli r22, r22, 56\n    or r22, r22, r21\n";
  uint64_t at = 0;
  for (size_t i = 0; i < pieces.size(); at += pieces[i++].bytes)
    s << "    li r1, " << partial(0) + at << "\n"
      << assembly::LoadAddress(30, pieces[i].input, 18) << "    dma.hv r1, r30, part" << i << ", f"
      << f + kFlagInput << "\n";
  s << "    wait seq, f" << f + kFlagInput << ", " << pieces.size() << "\n";
  const char* reduce = spec.op == ReduceOp::kSum   ? "vadd"
                       : spec.op == ReduceOp::kMax ? "vmax"
                                                   : "vor.u32";
  for (int r = 0; r < rounds; ++r) {
    // Partial r (the VPU's, after round 0) into the partner's slot r. Each round reads and
    // writes its own buffers, so no copy in flight is overwritten.
    if (r > 0) s << "    wait dma, f" << f + kFlagAdded << ", 1\n";
    s << "    li r3, " << partial(r) << "\n    or r3, r3, r22\n    li r4, "
      << partners[static_cast<size_t>(r)] << "\n    shli r4, r4, 56\n    or r4, r4, r21\n"
      << "    li r5, " << slot(r) << "\n    or r4, r4, r5\n    dma.g r4, r3, whole, f"
      << f + kRoundFlags[r] << "\n";
    // Partial r+1 = partial r (+) the partner's partial r: the same two values on both.
    s << "    wait vpu, f" << f + kRoundFlags[r] << ", 1\n    li r5, " << slot(r) << "\n    li r6, "
      << partial(r) << "\n    li r7, " << partial(r + 1) << "\n    li r8, " << size / kVreg
      << "\n    vloop r8, 4\n    vlds v0, r5, 4096\n    vlds v1, r6, 4096\n    " << reduce
      << " v1, v1, v0\n    vsts v1, r7, 4096\n    signal vpu, f" << f + kFlagAdded << ", 1\n";
  }
  // The result to every piece's output (the padding stays in VMEM).
  s << "    wait dma, f" << f + kFlagAdded << ", 1\n";
  at = 0;
  for (size_t i = 0; i < pieces.size(); at += pieces[i++].bytes) {
    if (!pieces[i].output) continue;
    s << "    li r2, " << partial(rounds) + at << "\n"
      << assembly::LoadAddress(26, *pieces[i].output, 18) << "    dma.vh r26, r2, part" << i
      << ", f" << f + kFlagStored << "\n";
  }
  s << "    halt\n";
  return s.str();
}

}  // namespace tpusim::collectives
