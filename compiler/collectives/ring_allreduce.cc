#include "compiler/collectives/ring_allreduce.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"

namespace tpusim::collectives {
namespace {

constexpr uint64_t kVreg = kRingVregBytes;
constexpr uint64_t kSingleSegmentBytes = kRingSingleSegmentBytes;
constexpr uint64_t kSetBytes = kRingSetBytes;

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

namespace {

// Two half-size rings in opposite directions, their steps interleaved in one program.
std::string BidirectionalProgram(const RingAllReduceSpec& spec, int position) {
  const int64_t n = static_cast<int64_t>(spec.ring.size());
  const uint64_t half = spec.bytes / 2;
  if (spec.bytes > kSingleSegmentBytes || half % (kVreg * n))
    throw std::invalid_argument("a bidirectional all-reduce takes up to 4 MiB in multiples of " +
                                std::to_string(2 * kVreg * n) + " bytes");
  const uint64_t c = half / n, data = 0, slots = half, out = half + (n - 1) * c;
  std::vector<int> backward(spec.ring.rbegin(), spec.ring.rend());
  const int back_pos = static_cast<int>(n - 1 - position);
  std::ostringstream s;
  const int fb = spec.flag_base, bb = spec.flag_base + 8;  // each ring's flags
  RingEmitter fwd(s, spec.ring, position, c, RingRegisters{"r20", "r29", fb, spec.vmem_base});
  RingEmitter bwd(s, backward, back_pos, c, RingRegisters{"r23", "r26", bb, spec.vmem_base});
  s << "# bidirectional ring all-reduce of " << spec.bytes << " bytes over " << n
    << " cores; ring position " << position << "\n"
    << ".desc chunk rows=1 row_bytes=" << c << " src_stride=0 dst_stride=0\n"
    << ".desc half rows=1 row_bytes=" << half << " src_stride=0 dst_stride=0\n"
    << ".tag \"" << spec.tag << "\"\n";
  if (spec.mailbox)  // both neighbours write into this core, and it into both
    EmitEntry(s, spec.ring[position], *spec.mailbox,
              {spec.ring[(position + n - 1) % n], spec.ring[(position + 1) % n]}, 2);
  fwd.EmitRingRegisters();
  bwd.EmitRingRegisters();
  s << "    li r26, " << spec.vmem_base + kSetBytes << "\n";  // the backward ring's buffers
  fwd.Vmem(1, data);
  bwd.Vmem(2, data);
  s << assembly::LoadAddress(8, spec.hbm_address, 9) << assembly::LoadAddress(9, half, 10)
    << "    add r9, r9, r8\n"
    << "    dma.hv r1, r8, half, f" << fb + kFlagInput << "\n    dma.hv r2, r9, half, f"
    << bb + kFlagInput << "\n    wait seq, f" << fb + kFlagInput << ", 1\n    wait seq, f"
    << bb + kFlagInput << ", 1\n";
  for (int64_t st = 0; st < n - 1; ++st) {
    fwd.ReduceScatterSend(data, slots, 0, st);
    bwd.ReduceScatterSend(data, slots, 0, st);
    fwd.ReduceScatterFold(data, slots, 0, spec.op, st);
    bwd.ReduceScatterFold(data, slots, 0, spec.op, st);
  }
  fwd.AllGatherBegin(data, out, fwd.Chunk(position + 1), kFlagAdded);
  bwd.AllGatherBegin(data, out, bwd.Chunk(back_pos + 1), kFlagAdded);
  for (int64_t st = 0; st < n - 1; ++st) {
    fwd.AllGatherStep(data, out, fwd.Chunk(position + 1), st);
    bwd.AllGatherStep(data, out, bwd.Chunk(back_pos + 1), st);
  }
  fwd.AllGatherEnd();
  bwd.AllGatherEnd();
  fwd.Vmem(1, out);
  bwd.Vmem(2, out);
  s << "    dma.vh r8, r1, half, f" << fb + kFlagStored << "\n    dma.vh r9, r2, half, f"
    << bb + kFlagStored << "\n    halt\n";
  return s.str();
}

}  // namespace

std::string RingAllReduceProgram(const RingAllReduceSpec& spec, int position) {
  const int64_t n = static_cast<int64_t>(spec.ring.size());
  if (n < 2) throw std::invalid_argument("a ring all-reduce needs at least 2 cores");
  if (position < 0 || position >= n) throw std::invalid_argument("position outside the ring");
  if (!spec.pieces.empty()) {
    if (spec.bidirectional)
      throw std::invalid_argument("a bidirectional all-reduce takes no pieces");
    return RingAllReducePiecesProgram(spec, position);
  }
  if (spec.bidirectional) {
    if (spec.valid_bytes || spec.hbm_output)
      throw std::invalid_argument("a bidirectional all-reduce takes no padding or output");
    return BidirectionalProgram(spec, position);
  }
  // One segment up to 4 MiB (one buffer set fits VMEM); beyond, 2 MiB segments in pairs.
  const uint64_t seg = spec.bytes <= kSingleSegmentBytes ? spec.bytes : kRingSegmentBytes;
  if (spec.bytes == 0 || seg % (kVreg * n) || spec.bytes % seg)
    throw std::invalid_argument("all-reduce size must be a positive multiple of 4096 x " +
                                std::to_string(n) + " bytes, and of 2 MiB above 4 MiB");
  const uint64_t c = seg / n, segments = spec.bytes / seg;
  const uint64_t valid = spec.valid_bytes ? spec.valid_bytes : spec.bytes;
  if (valid > spec.bytes || valid % 4 || (valid != spec.bytes && segments != 1))
    throw std::invalid_argument("all-reduce padding: valid bytes must fit one segment");
  if (segments > 1 || (valid == spec.bytes && GoesAsHalves(spec.bytes, static_cast<int>(n)))) {
    // One buffer of several segments (or halves): they go in pairs (ring_pieces.cc).
    RingAllReduceSpec one = spec;
    one.pieces = {
        RingPiece{spec.hbm_address, spec.bytes, spec.hbm_output.value_or(spec.hbm_address)}};
    return RingAllReducePiecesProgram(one, position);
  }
  const char* io = valid != spec.bytes ? "valid" : "segment";     // the HBM copies
  const uint64_t data = 0, slots = seg, out = seg + (n - 1) * c;  // VMEM layout
  std::ostringstream s;
  const int fb = spec.flag_base;
  RingEmitter ring(s, spec.ring, position, c, RingRegisters{"r20", "r29", fb, spec.vmem_base});
  s << "# ring all-reduce (" << ReduceOpName(spec.op) << ") of " << spec.bytes << " bytes over "
    << n << " cores; ring position " << position << "\n"
    << ".desc chunk rows=1 row_bytes=" << c << " src_stride=0 dst_stride=0\n"
    << ".desc segment rows=1 row_bytes=" << seg << " src_stride=0 dst_stride=0\n"
    << ".tag \"" << spec.tag << "\"\n";
  if (valid != spec.bytes)
    s << ".desc valid rows=1 row_bytes=" << valid << " src_stride=0 dst_stride=0\n";
  // r30: the array in HBM; the result goes to r26 (r30 unless hbm_output is given).
  const char* result = spec.hbm_output ? "r26" : "r30";
  if (spec.mailbox)  // the previous core writes into this one, this one into the next
    EmitEntry(s, spec.ring[position], *spec.mailbox, {spec.ring[(position + n - 1) % n]}, 1);
  ring.EmitRingRegisters();
  s << assembly::LoadAddress(30, spec.hbm_address, 18);
  if (spec.hbm_output) s << assembly::LoadAddress(26, *spec.hbm_output, 18);
  ring.Vmem(1, data);
  s << "    dma.hv r1, r30, " << io << ", f" << fb + kFlagInput << "\n    wait seq, f"
    << fb + kFlagInput << ", 1\n";
  ring.ReduceScatter(data, slots, /*shift=*/0, spec.op);
  ring.AllGather(data, out, ring.Chunk(position + 1), kFlagAdded);
  ring.Vmem(2, out);
  s << "    dma.vh " << result << ", r2, " << io << ", f" << fb + kFlagStored << "\n"
    << "    halt\n";
  return s.str();
}

}  // namespace tpusim::collectives
