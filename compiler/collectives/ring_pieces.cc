// A ring all-reduce over several buffers at once (a tuple all-reduce, as XLA's combiner
// makes them): the buffers form one array back to back, reduced segment by segment as in
// ring_allreduce.cc, but each segment gathers its parts of the buffers from HBM and scatters
// its results to their outputs, so nothing is copied into a combined buffer first and ring
// padding never reaches HBM. Segments are unrolled: their parts differ. Beyond one segment
// they go in pairs, one round the ring each way (both directions of every link), their
// steps interleaved as in the bidirectional ring.
#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"
#include "compiler/collectives/ring_allreduce.h"

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

// One ring's share of a pair: its segment, buffer set, stores of the pair before and
// the parts of its segment.
struct Lane {
  RingEmitter ring;
  int flags;         // flag base
  uint64_t set;      // VMEM offset of its buffer set
  const char* base;  // the register holding it
  std::vector<Part> parts;
  uint64_t begin = 0;     // the segment's first byte in the array
  int stored_before = 0;  // result copies the previous pair's segment of this lane made
};

// Segments 2j (forward ring, buffer set 0) and 2j+1 (backward ring, the set above it)
// together. Both buffer sets are reused by every pair, so each lane waits, before its
// first send, for the previous pair's result copies out of its `out` (a neighbour's
// all-gather may write there once this core has sent); `data` has no reader left after
// AllGatherEnd because the first all-gather send reads `out` (GatherFromOut).
std::string PairedProgram(const RingAllReduceSpec& spec, int position, uint64_t seg,
                          const std::map<uint64_t, std::string>& descs, std::ostringstream& s) {
  const int64_t n = static_cast<int64_t>(spec.ring.size());
  const uint64_t c = seg / n, segments = spec.bytes / seg;
  const uint64_t data = 0, slots = seg, out = seg + (n - 1) * c;  // VMEM layout of a set
  std::vector<int> backward(spec.ring.rbegin(), spec.ring.rend());
  const int back_pos = static_cast<int>(n - 1 - position);
  Lane lanes[2] = {{RingEmitter(s, spec.ring, position, c,
                                RingRegisters{"r20", "r29", spec.flag_base, spec.vmem_base}),
                    spec.flag_base,
                    spec.vmem_base,
                    "r29",
                    {}},
                   {RingEmitter(s, backward, back_pos, c,
                                RingRegisters{"r23", "r26", spec.flag_base + 8, spec.vmem_base}),
                    spec.flag_base + 8,
                    spec.vmem_base + kRingSetBytes,
                    "r26",
                    {}}};
  const int mine[2] = {position, back_pos};
  if (spec.mailbox)  // both neighbours write into this core, and it into both
    EmitEntry(s, spec.ring[position], *spec.mailbox,
              {spec.ring[(position + n - 1) % n], spec.ring[(position + 1) % n]}, 2);
  for (Lane& l : lanes) {
    l.ring.EmitRingRegisters();
    l.ring.GatherFromOut();
    s << "    li " << l.base << ", " << l.set << "\n";
  }
  auto desc = [&](const Part& p) { return descs.at(p.hi - p.lo); };
  for (uint64_t k = 0; k < segments; k += 2) {
    const int active = k + 1 < segments ? 2 : 1;
    for (int i = 0; i < active; ++i) {
      Lane& l = lanes[i];
      l.begin = (k + i) * seg;
      l.parts = PartsOf(spec.pieces, l.begin, l.begin + seg);
      for (const Part& p : l.parts) {
        l.ring.Vmem(1, data + (p.lo - l.begin));
        s << assembly::LoadAddress(30, spec.pieces[p.piece].input + p.in_piece, 18)
          << "    dma.hv r1, r30, " << desc(p) << ", f" << l.flags + kFlagInput << "\n";
      }
    }
    for (int i = 0; i < active; ++i) {
      Lane& l = lanes[i];
      s << "    wait seq, f" << l.flags + kFlagInput << ", " << l.parts.size() << "\n";
      if (l.stored_before)
        s << "    wait dma, f" << l.flags + kFlagStored << ", " << l.stored_before << "\n";
    }
    for (int64_t st = 0; st < n - 1; ++st) {
      for (int i = 0; i < active; ++i) lanes[i].ring.ReduceScatterSend(data, slots, 0, st);
      for (int i = 0; i < active; ++i) lanes[i].ring.ReduceScatterFold(data, slots, 0, spec.op, st);
    }
    for (int i = 0; i < active; ++i)
      lanes[i].ring.AllGatherBegin(data, out, lanes[i].ring.Chunk(mine[i] + 1), kFlagAdded);
    for (int64_t st = 0; st < n - 1; ++st)
      for (int i = 0; i < active; ++i)
        lanes[i].ring.AllGatherStep(data, out, lanes[i].ring.Chunk(mine[i] + 1), st);
    for (int i = 0; i < active; ++i) lanes[i].ring.AllGatherEnd();
    for (int i = 0; i < active; ++i) {
      Lane& l = lanes[i];
      l.stored_before = 0;
      for (const Part& p : l.parts) {
        const RingPiece& piece = spec.pieces[p.piece];
        if (!piece.output) continue;
        l.ring.Vmem(2, out + (p.lo - l.begin));
        s << assembly::LoadAddress(30, *piece.output + p.in_piece, 18) << "    dma.vh r30, r2, "
          << desc(p) << ", f" << l.flags + kFlagStored << "\n";
        ++l.stored_before;
      }
    }
  }
  s << "    halt\n";
  return s.str();
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
  uint64_t seg = spec.bytes <= kRingSingleSegmentBytes ? spec.bytes : kRingSegmentBytes;
  if (spec.bytes == 0 || seg % (kRingVregBytes * n) || spec.bytes % seg)
    throw std::invalid_argument("all-reduce size must be a positive multiple of 4096 x " +
                                std::to_string(n) + " bytes, and of 2 MiB above 4 MiB");
  if (valid > spec.bytes || spec.bytes - valid >= seg)
    throw std::invalid_argument("all-reduce pieces: the padding must lie in the last segment");
  if (seg == spec.bytes && GoesAsHalves(spec.bytes, static_cast<int>(n)) &&
      spec.bytes - valid < spec.bytes / 2)
    seg = spec.bytes / 2;  // one segment as two halves, one each way
  const uint64_t c = seg / n, segments = spec.bytes / seg;
  const uint64_t data = 0, slots = seg, out = seg + (n - 1) * c;  // VMEM layout of a set
  std::map<uint64_t, std::string> descs;                          // one descriptor per copy size
  for (uint64_t k = 0; k < segments; ++k)
    for (const Part& p : PartsOf(spec.pieces, k * seg, (k + 1) * seg))
      descs.emplace(p.hi - p.lo, "part" + std::to_string(descs.size()));
  std::ostringstream s;
  const int fb = spec.flag_base;
  RingEmitter ring(s, spec.ring, position, c, RingRegisters{"r20", "r29", fb, spec.vmem_base});
  s << "# ring all-reduce (" << ReduceOpName(spec.op) << ") of " << spec.pieces.size()
    << " buffers, " << valid << " bytes padded to " << spec.bytes << ", over " << n << " cores in "
    << segments << " segment(s)" << (segments > 1 ? ", in pairs round both ways" : "")
    << "; ring position " << position << "\n.desc chunk rows=1 row_bytes=" << c
    << " src_stride=0 dst_stride=0\n";
  for (const auto& [bytes, name] : descs)
    s << ".desc " << name << " rows=1 row_bytes=" << bytes << " src_stride=0 dst_stride=0\n";
  s << ".tag \"" << spec.tag << "\"\n";
  if (segments > 1) return PairedProgram(spec, position, seg, descs, s);
  if (spec.mailbox)
    EmitEntry(s, spec.ring[position], *spec.mailbox, {spec.ring[(position + n - 1) % n]}, 1);
  ring.EmitRingRegisters();
  // One segment.
  const std::vector<Part> parts = PartsOf(spec.pieces, 0, seg);
  s << "    li r29, " << spec.vmem_base << "\n";
  for (const Part& p : parts) {
    ring.Vmem(1, data + p.lo);
    s << assembly::LoadAddress(30, spec.pieces[p.piece].input + p.in_piece, 18)
      << "    dma.hv r1, r30, " << descs[p.hi - p.lo] << ", f" << fb + kFlagInput << "\n";
  }
  s << "    wait seq, f" << fb + kFlagInput << ", " << parts.size() << "\n";
  ring.ReduceScatter(data, slots, /*shift=*/0, spec.op);
  ring.AllGather(data, out, ring.Chunk(position + 1), kFlagAdded);
  for (const Part& p : parts) {
    const RingPiece& piece_of = spec.pieces[p.piece];
    if (!piece_of.output) continue;
    ring.Vmem(2, out + p.lo);
    s << assembly::LoadAddress(26, *piece_of.output + p.in_piece, 18) << "    dma.vh r26, r2, "
      << descs[p.hi - p.lo] << ", f" << fb + kFlagStored << "\n";
  }
  s << "    halt\n";
  return s.str();
}

}  // namespace tpusim::collectives
