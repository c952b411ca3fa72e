#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/vpu/tile_emitter.h"

namespace tpusim::lowering::tiles {

void Emitter::IndexTable() {
  for (int64_t k = 0; k < p_.index_table; ++k) {
    const float f = static_cast<float>(k);
    uint32_t bits = static_cast<uint32_t>(k);
    if (!p_.index_bits) std::memcpy(&bits, &f, sizeof bits);
    char line[64];
    std::snprintf(line, sizeof line, "    vmovi v20, f32:0x%08x\n", bits);
    s_ << line << "    li r3, " << kIndexScratch + k * kVregBytes << "\n    vst v20, r3\n";
  }
  s_ << "    signal vpu, f8, 1\n    wait dma, f8, 1\n    li r1, " << kTileIndexTable
     << "\n    li r2, " << kIndexScratch << "\n    dma.vv r1, r2, "
     << Desc("rows=" + std::to_string(p_.index_table) +
             " row_bytes=4 src_stride=" + std::to_string(kVregBytes) + " dst_stride=4")
     << ", f9\n    wait dma, f9, 1\n";
}

std::string Emitter::Desc(const std::string& text) {
  auto [it, added] = descs_.emplace(text, "d" + std::to_string(descs_.size()));
  if (added) head_ << ".desc " << it->second << " " << text << "\n";
  return it->second;
}

std::string Emitter::Fetch(const Tile& t, int slot) {
  std::ostringstream s;
  const int64_t base = slot * l_.slot_bytes(), mask = base + l_.mask() * l_.buf_bytes();
  if (t.masked)  // zero the mask, then copy 1.0 over the tile's valid elements
    s << "    vmovi v22, 0.0\n    li r3, " << mask << "\n    li r4, " << t.vregs
      << "\n    vloop r4, 1\n    vsts v22, r3, " << kVregBytes << "\n";
  s << "    signal vpu, f" << 2 + slot << ", 1\n    wait dma, f" << 2 + slot << ", 1\n";
  if (t.masked)
    s << "    li r1, " << mask << "\n    li r2, " << l_.ones() << "\n    dma.vv r1, r2, "
      << Desc("rows=" + std::to_string(t.rows) +
              " row_bytes=" + std::to_string(t.block_cols() * 4) + " src_stride=0 dst_stride=512")
      << ", f" << slot << "\n";
  for (size_t i = 0; i < p_.inputs.size(); ++i) {
    // A broadcast operand moves once, not once per element it fills: a row repeated on
    // every row is one vreg of that row (loaded on every trip); a column (or a scalar)
    // puts each row's value in lane 0 of its sublane, and the VPU spreads it (Trip).
    const TileOperand& o = p_.inputs[i];
    // Rows repeating within the tile arrive as planes: one period each, read again.
    const bool planes = o.period > 0 && o.period < t.rows;
    const int64_t rows = o.row_stride == 0 ? kTileSublanes : planes ? o.period : t.rows;
    const int64_t row_bytes = o.col_stride == 0 ? 4 : t.block_cols() * 4;
    std::string d = "rows=" + std::to_string(rows) + " row_bytes=" + std::to_string(row_bytes) +
                    " src_stride=" + std::to_string(o.row_stride * 4) + " dst_stride=512";
    if (planes)
      d += " planes=" + std::to_string(t.rows / o.period) +
           " src_plane_stride=0 dst_plane_stride=" + std::to_string(o.period * 512);
    if (t.blocks > 1)  // block b's rows go to the buffer's vregs from b x t.vregs
      d += " planes=" + std::to_string(t.blocks) +
           " src_plane_stride=" + std::to_string(t.block_cols() * 4) +
           " dst_plane_stride=" + std::to_string(t.vregs * kVregBytes);
    s << "    li r1, " << base + static_cast<int64_t>(i) * l_.buf_bytes() << "\n"
      << (o.vmem ? "    dma.vv" : "    dma.hv") << " r1, r" << kHbmPtr[i] << ", " << Desc(d)
      << ", f" << slot << "\n";
  }
  return s.str();
}

std::string Emitter::Op(const std::string& d, const std::string& a, const std::string& b) const {
  return (p_.max ? "vmax " : "vadd ") + d + ", " + a + ", " + b;
}

std::vector<std::string> Emitter::Trip(const Tile& t) const {
  std::vector<std::string> b;
  const std::string step = ", " + std::to_string(kVregBytes);
  for (size_t i = 0; i < p_.inputs.size(); ++i) {
    const TileOperand& o = p_.inputs[i];
    const std::string v = "v" + std::to_string(i);
    b.push_back("vlds " + v + ", r" + std::to_string(kInPtr[i]) +
                (o.row_stride == 0 ? ", 0" : step));
    if (o.col_stride == 0) b.push_back("vperm " + v + ", " + v + ", v20");  // lane 0 to all
    if (o.index != TileIndex::kNone)
      b.push_back((p_.index_bits ? "vadd.s32 " : "vadd ") + v + ", " + v + ", v21");
  }
  b.insert(b.end(), p_.body.begin(), p_.body.end());
  std::string v = "v" + std::to_string(p_.result);
  if (t.masked) {
    b.push_back("vlds v23, r" + std::to_string(kMaskPtr) + step);
    b.push_back("vsel v22, v23, " + v + ", v21");
    v = "v22";
  }
  switch (p_.reduce) {
    case TileReduce::kNone:
      b.push_back("vsts " + v + ", r" + std::to_string(kOutPtr) + step);
      break;
    case TileReduce::kCols:
    case TileReduce::kAll:
      b.push_back(Op("v31", "v31", v));
      break;
    case TileReduce::kRows:
      b.push_back(std::string("vredlane.") + (p_.max ? "max" : "sum") + " v22, " + v);
      if (!t.first_col) b.push_back("vlds v20, r17" + step), b.push_back(Op("v22", "v22", "v20"));
      if (t.last_col) b.push_back("vmovi v20, " + Init()), b.push_back(Op("v22", "v22", "v20"));
      b.push_back("vsts v22, r" + std::to_string(t.last_col ? kOutPtr : 17) + step);
      break;
  }
  return b;
}

std::string Emitter::ComputeBlocks(const Tile& t, int slot) {
  std::ostringstream s;
  const int64_t base = slot * l_.slot_bytes(), out = base + l_.out() * l_.buf_bytes();
  const int dmas = static_cast<int>(p_.inputs.size()) + (t.masked ? 1 : 0);
  s << "    wait vpu, f" << slot << ", " << dmas << "\n    li r" << kMaskPtr << ", "
    << base + l_.mask() * l_.buf_bytes() << "\n";
  const std::vector<std::string> trip = Trip(t);
  for (int64_t b = 0; b < t.blocks; ++b) {
    s << "    vmovi v31, " << (p_.max ? "-inf" : "0.0") << "\n";
    for (size_t i = 0; i < p_.inputs.size(); ++i)
      s << "    li r" << kInPtr[i] << ", "
        << base + static_cast<int64_t>(i) * l_.buf_bytes() + b * t.vregs * kVregBytes << "\n";
    s << "    li r16, " << t.vregs << "\n    vloop r16, " << trip.size() << "\n";
    for (const std::string& line : trip) s << "    " << line << "\n";
    if (b == 0) s << "    wait vpu, f" << 6 + slot << ", 1\n";  // the last store left
    s << "    vredsub." << (p_.max ? "max" : "sum") << " v22, v31\n    vmovi v20, " << Init()
      << "\n    " << Op("v22", "v22", "v20") << "\n    li r3, " << out + b * kVregBytes
      << "\n    vst v22, r3\n";
  }
  const std::string row = std::to_string(t.block_cols() * 4);
  s << Store(slot, out,
             "rows=" + std::to_string(t.blocks) + " row_bytes=" + row +
                 " src_stride=" + std::to_string(kVregBytes) + " dst_stride=" + row);
  return s.str();
}

std::string Emitter::Compute(const Tile& t, int slot) {
  if (t.blocks > 1) return ComputeBlocks(t, slot);
  std::ostringstream s;
  const int64_t base = slot * l_.slot_bytes(), out = base + l_.out() * l_.buf_bytes();
  const int dmas = static_cast<int>(p_.inputs.size()) + (t.masked ? 1 : 0);
  const bool stores =
      p_.reduce == TileReduce::kNone || (p_.reduce == TileReduce::kRows && t.last_col);
  if (dmas) s << "    wait vpu, f" << slot << ", " << dmas << "\n";
  if (stores) s << "    wait vpu, f" << 6 + slot << ", 1\n";
  if ((p_.reduce == TileReduce::kCols && t.r0 == 0) ||
      (p_.reduce == TileReduce::kAll && t.group > 0 && t.r0 == 0 && t.first_col))
    s << "    vmovi v31, " << (p_.max ? "-inf" : "0.0") << "\n";
  for (size_t i = 0; i < p_.inputs.size(); ++i)
    s << "    li r" << kInPtr[i] << ", " << base + static_cast<int64_t>(i) * l_.buf_bytes() << "\n";
  const std::vector<std::string> trip = Trip(t);
  if (LaneBroadcasts()) s << "    vmovi v20, 0.0\n";  // vperm's index: lane 0
  if (IndexOffsets()) {  // the tile's first index in every element of v21
    s << "    vbcast v21, r" << kIndexOffset << "\n";
    if (!p_.index_bits) s << "    vcvt.f32.s32 v21, v21\n";
  }
  s << "    li r" << kMaskPtr << ", " << base + l_.mask() * l_.buf_bytes() << "\n    li r"
    << kOutPtr << ", " << out << "\n    li r17, " << l_.row_acc() << "\n    li r16, " << t.vregs
    << "\n    vloop r16, " << trip.size() << "\n";
  for (const std::string& line : trip) s << "    " << line << "\n";
  if (p_.reduce == TileReduce::kNone)
    s << Store(slot, out,
               "rows=" + std::to_string(t.rows) + " row_bytes=" + std::to_string(t.cols * 4) +
                   " src_stride=512 dst_stride=" + std::to_string(p_.cols * 4));
  if (p_.reduce == TileReduce::kRows && t.last_col)
    s << Store(slot, out,
               "rows=" + std::to_string(t.rows) + " row_bytes=4 src_stride=512 dst_stride=4");
  const bool done_cols = p_.reduce == TileReduce::kCols && t.last_row;
  const bool done_all = p_.reduce == TileReduce::kAll && t.last_row && t.last_col;
  if (done_cols || done_all) {
    s << "    wait vpu, f" << 6 + slot << ", 1\n    vredsub." << (p_.max ? "max" : "sum")
      << " v22, v31\n";
    if (done_all) s << "    vredlane." << (p_.max ? "max" : "sum") << " v22, v22\n";
    s << "    vmovi v20, " << Init() << "\n    " << Op("v22", "v22", "v20") << "\n    li r3, "
      << out << "\n    vst v22, r3\n"
      << Store(slot, out,
               "rows=1 row_bytes=" + std::to_string(done_all ? 4 : t.cols * 4) +
                   " src_stride=0 dst_stride=0");
  }
  return s.str();
}

bool Emitter::LaneBroadcasts() const {
  return std::any_of(p_.inputs.begin(), p_.inputs.end(),
                     [](const TileOperand& o) { return o.col_stride == 0; });
}

std::string Emitter::Init() const {
  char text[40];
  std::snprintf(text, sizeof text, "%.9g", p_.init);
  return text;
}

std::string Emitter::Store(int slot, int64_t out, const std::string& desc) {
  std::ostringstream s;
  s << "    signal vpu, f" << 4 + slot << ", 1\n    wait dma, f" << 4 + slot << ", 1\n"
    << "    li r19, " << out << "\n    " << (p_.output_vmem ? "dma.vv" : "dma.vh") << " r"
    << kOutHbm << ", r19, " << Desc(desc) << ", f" << 6 + slot << "\n";
  return s.str();
}

}  // namespace tpusim::lowering::tiles
