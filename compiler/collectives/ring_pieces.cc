// A ring all-reduce over several buffers at once (a tuple all-reduce, as XLA's combiner
// makes them): the buffers form one array back to back, reduced segment by segment as in
// ring_allreduce.cc, but each segment gathers its parts of the buffers from HBM and scatters
// its results to their outputs, so nothing is copied into a combined buffer first and ring
// padding never reaches HBM. Segments are unrolled: their parts differ.
#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/lowering/asm_util.h"

namespace tpusim::collectives {
namespace {

struct Part {  // the bytes [lo, hi) of the array that piece `piece` holds in one segment
  size_t piece;
  uint64_t lo, hi;
  uint64_t in_piece;  // offset of lo inside the piece
};

// The parts of segment [begin, end) of the array, in array order.
std::vector<Part> PartsOf(const std::vector<RingPiece>& pieces, uint64_t begin, uint64_t end) {
  std::vector<Part> parts;
  uint64_t start = 0;
  for (size_t i = 0; i < pieces.size(); start += pieces[i++].bytes) {
    const uint64_t lo = std::max(start, begin), hi = std::min(start + pieces[i].bytes, end);
    if (lo < hi) parts.push_back(Part{i, lo, hi, lo - start});
  }
  return parts;
}

}  // namespace

std::string RingAllReducePiecesProgram(const RingAllReduceSpec& spec, int position) {
  const int64_t n = static_cast<int64_t>(spec.ring.size());
  uint64_t valid = 0;
  for (const RingPiece& p : spec.pieces) {
    if (p.bytes == 0 || p.bytes % 4 || p.input % 4 || (p.output && *p.output % 4))
      throw std::invalid_argument("all-reduce pieces must be non-empty and 4-byte aligned");
    valid += p.bytes;
  }
  const uint64_t seg = spec.bytes <= kRingSingleSegmentBytes ? spec.bytes : kRingSegmentBytes;
  if (spec.bytes == 0 || seg % (kRingVregBytes * n) || spec.bytes % seg)
    throw std::invalid_argument("all-reduce size must be a positive multiple of 4096 x " +
                                std::to_string(n) + " bytes, and of 2 MiB above 4 MiB");
  if (valid > spec.bytes || spec.bytes - valid >= seg)
    throw std::invalid_argument("all-reduce pieces: the padding must lie in the last segment");
  const uint64_t c = seg / n, segments = spec.bytes / seg;
  const uint64_t data = 0, slots = seg, out = seg + (n - 1) * c;  // VMEM layout of a set
  std::map<uint64_t, std::string> descs;                          // one descriptor per copy size
  for (uint64_t k = 0; k < segments; ++k)
    for (const Part& p : PartsOf(spec.pieces, k * seg, (k + 1) * seg))
      descs.emplace(p.hi - p.lo, "part" + std::to_string(descs.size()));
  std::ostringstream s;
  const int fb = spec.flag_base;
  RingEmitter ring(s, spec.ring, position, c, RingRegisters{"r20", "r29", fb});
  s << "# ring all-reduce (" << ReduceOpName(spec.op) << ") of " << spec.pieces.size()
    << " buffers, " << valid << " bytes padded to " << spec.bytes << ", over " << n << " cores in "
    << segments << " segment(s); ring position " << position
    << "\n.desc chunk rows=1 row_bytes=" << c << " src_stride=0 dst_stride=0\n";
  for (const auto& [bytes, name] : descs)
    s << ".desc " << name << " rows=1 row_bytes=" << bytes << " src_stride=0 dst_stride=0\n";
  s << ".tag \"" << spec.tag << "\"\n";
  if (spec.mailbox)
    EmitEntryHandshake(s, spec.ring[position], *spec.mailbox, {spec.ring[(position + n - 1) % n]},
                       1);
  ring.EmitRingRegisters();
  for (uint64_t k = 0; k < segments; ++k) {
    const uint64_t begin = k * seg;
    const std::vector<Part> parts = PartsOf(spec.pieces, begin, begin + seg);
    s << "    li r29, " << k % 2 * kRingSetBytes << "\n";  // alternate buffer sets
    for (const Part& p : parts) {
      ring.Vmem(1, data + (p.lo - begin));
      s << lowering::LoadAddress(30, spec.pieces[p.piece].input + p.in_piece, 18)
        << "    dma.hv r1, r30, " << descs[p.hi - p.lo] << ", f" << fb + kFlagInput << "\n";
    }
    s << "    wait seq, f" << fb + kFlagInput << ", " << parts.size() << "\n";
    ring.ReduceScatter(data, slots, /*shift=*/0, spec.op);
    ring.AllGather(data, out, ring.Chunk(position + 1), kFlagAdded);
    for (const Part& p : parts) {
      const RingPiece& piece_of = spec.pieces[p.piece];
      if (!piece_of.output) continue;
      ring.Vmem(2, out + (p.lo - begin));
      s << lowering::LoadAddress(26, *piece_of.output + p.in_piece, 18) << "    dma.vh r26, r2, "
        << descs[p.hi - p.lo] << ", f" << fb + kFlagStored << "\n";
    }
  }
  s << "    halt\n";
  return s.str();
}

}  // namespace tpusim::collectives
