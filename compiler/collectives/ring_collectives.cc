#include "compiler/collectives/ring_collectives.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"

namespace tpusim::collectives {
namespace {

constexpr uint64_t kVreg = 4096;
constexpr uint64_t kMaxBytes = kRingCollectiveMaxBytes;

void Header(std::ostringstream& s, const char* what, uint64_t part, uint64_t whole,
            const std::string& tag) {
  s << "# " << what << "\n"
    << ".desc chunk rows=1 row_bytes=" << part << " src_stride=0 dst_stride=0\n"
    << ".desc whole rows=1 row_bytes=" << whole << " src_stride=0 dst_stride=0\n"
    << ".tag \"" << tag << "\"\n";
}

// No replica groups: one group of every core, in replica (core id) order.
std::vector<int> DefaultGroup(const RingCollectiveSpec& spec) {
  std::vector<int> all = spec.board_ring;
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

std::pair<std::vector<int>, int> GroupRing(const RingCollectiveSpec& spec, int core) {
  std::vector<int> group;
  if (spec.replica_groups.empty()) {
    group = DefaultGroup(spec);
  } else {
    for (const auto& g : spec.replica_groups)
      if (std::find(g.begin(), g.end(), core) != g.end()) group = g;
    if (group.empty())
      throw std::invalid_argument("core " + std::to_string(core) + " is in no replica group");
  }
  // Ring order along the board's ring keeps every step short; group index order (for
  // XLA's part numbering) is the order the group was written in.
  std::vector<int> ring;
  for (int c : spec.board_ring)
    if (std::find(group.begin(), group.end(), c) != group.end()) ring.push_back(c);
  if (ring.size() != group.size())
    throw std::invalid_argument("replica group names a core the board does not have");
  int pos = static_cast<int>(std::find(ring.begin(), ring.end(), core) - ring.begin());
  return {ring, pos};
}

// Ring position p holds, after reduce-scatter with shift s, chunk p + s + 1 of the ring's
// chunk order. Chunk k of the ring order is group part index_of(ring[k]) so that every
// member ends with its own part: we lay chunks out in ring order and map parts on I/O.
std::string ReduceScatterProgram(const RingCollectiveSpec& spec, int core) {
  auto [ring, p] = GroupRing(spec, core);
  const int n = static_cast<int>(ring.size());
  if (n < 2) throw std::invalid_argument("reduce-scatter needs at least 2 cores per group");
  const uint64_t part = spec.input_bytes / n, rows = spec.part_rows;
  if (part == 0 || part % kVreg || spec.input_bytes % n || spec.input_bytes > kMaxBytes)
    throw std::invalid_argument(
        "reduce-scatter input must be n parts of a multiple of 4096 "
        "bytes, at most 4 MiB");
  if (rows == 0 || part % rows || (rows > 1 && spec.member_stride))
    throw std::invalid_argument("reduce-scatter parts must be whole rows, in one round");
  // Group index of each ring member (XLA numbers parts by position in the group).
  std::vector<int> group = spec.replica_groups.empty() ? DefaultGroup(spec) : std::vector<int>{};
  for (const auto& g : spec.replica_groups)
    if (std::find(g.begin(), g.end(), core) != g.end()) group = g;
  auto index_of = [&](int c) {
    return static_cast<uint64_t>(std::find(group.begin(), group.end(), c) - group.begin());
  };
  std::ostringstream s;
  Header(s, "reduce-scatter", part, spec.input_bytes, spec.tag);
  const int fb = spec.flag_base;
  RingEmitter e(s, ring, p, part, RingRegisters{"r20", "r29", fb, spec.vmem_base});
  if (spec.mailbox) EmitEntry(s, core, *spec.mailbox, {ring[(p + n - 1) % n]}, 1);
  e.EmitRingRegisters();
  // VMEM: chunk k (ring order) holds group part index_of(ring[k]); gather them from HBM.
  const uint64_t data = 0, slots = spec.input_bytes;
  // Rows of a part (scattered along a dimension after the leading ones): row r of member
  // g's part is at input + (r n + g) x row.
  const uint64_t row = part / rows;
  if (rows > 1)
    s << ".desc part rows=" << rows << " row_bytes=" << row << " src_stride=" << n * row
      << " dst_stride=" << row << "\n";
  for (int k = 0; k < n; ++k) {
    e.Vmem(1, data + k * part);
    const uint64_t stride = spec.member_stride ? spec.member_stride : rows > 1 ? row : part;
    s << assembly::LoadAddress(2, spec.input_address + index_of(ring[k]) * stride, 9)
      << "    dma.hv r1, r2, " << (rows > 1 ? "part" : "chunk") << ", f" << fb + kFlagInput << "\n";
  }
  s << "    wait seq, f" << fb + kFlagInput << ", " << n << "\n";
  e.ReduceScatter(data, slots, /*shift=*/-1, spec.op);  // ends with chunk p reduced
  s << "    wait dma, f" << fb + kFlagAdded << ", 1\n";
  e.Vmem(2, data + p * part);
  s << assembly::LoadAddress(1, spec.output_address, 9) << "    dma.vh r1, r2, chunk, f"
    << fb + kFlagStored << "\n    halt\n";
  return s.str();
}

std::string AllGatherProgram(const RingCollectiveSpec& spec, int core) {
  auto [ring, p] = GroupRing(spec, core);
  const int n = static_cast<int>(ring.size());
  if (n < 2) throw std::invalid_argument("all-gather needs at least 2 cores per group");
  const uint64_t part = spec.input_bytes, rows = spec.part_rows;
  // Only DMA touches the chunks, so a part need not be whole vregs: 4-byte aligned rows.
  if (part == 0 || rows == 0 || part % rows || (part / rows) % 4 || part * n > kMaxBytes)
    throw std::invalid_argument(
        "all-gather parts must be rows of a multiple of 4 bytes, at most 4 MiB in all");
  std::vector<int> group = spec.replica_groups.empty() ? DefaultGroup(spec) : std::vector<int>{};
  for (const auto& g : spec.replica_groups)
    if (std::find(g.begin(), g.end(), core) != g.end()) group = g;
  std::ostringstream s;
  Header(s, "all-gather", part, part * n, spec.tag);
  const uint64_t row = part / rows;  // a part's rows land n rows apart in the output
  s << ".desc part rows=" << rows << " row_bytes=" << row << " src_stride=" << row
    << " dst_stride=" << row * n << "\n";
  const int fb = spec.flag_base;
  RingEmitter e(s, ring, p, part, RingRegisters{"r20", "r29", fb, spec.vmem_base});
  if (spec.mailbox) EmitEntry(s, core, *spec.mailbox, {ring[(p + n - 1) % n]}, 1);
  e.EmitRingRegisters();
  // Chunks in ring order in VMEM; the output is written part by part in group order.
  const uint64_t data = 0, out = part * n;
  e.Vmem(1, data + p * part);
  s << assembly::LoadAddress(2, spec.input_address, 9) << "    dma.hv r1, r2, chunk, f"
    << fb + kFlagInput << "\n";
  e.AllGather(data, out, static_cast<uint64_t>(p), kFlagInput);
  for (int k = 0; k < n; ++k) {
    uint64_t index =
        static_cast<uint64_t>(std::find(group.begin(), group.end(), ring[k]) - group.begin());
    e.Vmem(2, out + k * part);
    const uint64_t stride = spec.member_stride ? spec.member_stride : row;
    s << assembly::LoadAddress(1, spec.output_address + index * stride, 9)
      << "    dma.vh r1, r2, part, f" << fb + kFlagStored << "\n";
  }
  s << "    halt\n";
  return s.str();
}

std::string CollectivePermuteProgram(const std::vector<std::pair<int, int>>& pairs,
                                     uint64_t input_address, uint64_t output_address,
                                     uint64_t bytes, int core, const std::string& tag, int fb,
                                     std::optional<Mailbox> mailbox) {
  if (bytes == 0 || bytes % 4)
    throw std::invalid_argument("collective-permute buffers must be whole f32 words");
  std::ostringstream s;
  s << "# collective-permute\n.desc whole rows=1 row_bytes=" << bytes
    << " src_stride=0 dst_stride=0\n.tag \"" << tag << "\"\n";
  if (mailbox) EmitEntryBarrier(s, core, *mailbox);  // sources write into this core's output
  int incoming = 0;
  for (auto [src, dst] : pairs) {
    if (dst == core) ++incoming;
    if (src != core) continue;
    s << "    li r1, " << dst << "\n    shli r1, r1, 56\n"
      << assembly::LoadAddress(2, output_address, 5) << "    or r1, r1, r2\n    li r3, " << core
      << "\n    shli r3, r3, 56\n"
      << assembly::LoadAddress(4, input_address, 5)
      << "    or r3, r3, r4\n    dma.g r1, r3, whole, f" << fb + kFlagGathered << "\n";
  }
  if (incoming > 1)
    throw std::invalid_argument("core " + std::to_string(core) + " is the target of " +
                                std::to_string(incoming) + " pairs");
  if (incoming) {
    s << "    wait seq, f" << fb + kFlagGathered << ", 1\n";
  } else {  // nobody sends here: the output is zeros
    s << "    vmovi v0, 0.0\n    li r5, 0\n    li r6, " << (bytes + 4095) / 4096 * 4096
      << "\nzero:\n    vst v0, r5\n    addi r5, r5, 4096\n    blt r5, r6, zero\n"
      << "    signal vpu, f" << fb + kFlagLocalCopy << ", 1\n    wait dma, f" << fb + kFlagLocalCopy
      << ", 1\n"
      << assembly::LoadAddress(1, output_address, 7) << "    li r2, 0\n"
      << "    dma.vh r1, r2, whole, f" << fb + kFlagStored << "\n";
  }
  s << "    halt\n";
  return s.str();
}

}  // namespace tpusim::collectives
