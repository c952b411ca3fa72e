#include "compiler/lowering/tile_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

#include "compiler/lowering/asm_util.h"

namespace tpusim::lowering {
namespace {

constexpr int64_t kVregBytes = kTileSublanes * kTileEdge * 4;
constexpr int64_t kBufBytes = kTileVregs * kVregBytes;  // one operand's tile
constexpr int64_t kSlotBytes = 8 * kBufBytes;           // inputs 0..5, mask, output
constexpr int64_t kOnes = 2 * kSlotBytes;               // a vreg of 1.0 (mask source)
constexpr int64_t kRowAcc = kOnes + kVregBytes;         // partial row results (kRows)
constexpr int64_t kIndexScratch = 2 << 20;              // vregs whose first element is k
constexpr int kInPtr = 7, kMaskPtr = 13, kOutPtr = 14;  // VPU loop address registers
// v20: scratch, v21: the neutral element, v22: the masked result, v23: the mask.

struct Tile {
  int64_t r0 = 0, c0 = 0, rows = 0, cols = 0, vregs = 0;
  bool first_col = true, last_col = true, last_row = true, masked = false;
};

class Emitter {
 public:
  explicit Emitter(const TileProgram& p) : p_(p) {}

  std::string Run() {
    const bool reduce = p_.reduce != TileReduce::kNone;
    const std::string neutral = !p_.max ? "0.0" : "-inf";
    s_ << "# tiled VPU kernel [" << p_.rows << "," << p_.cols << "]\n";
    for (int f = 0; f < 9; ++f) s_ << "    sflag f" << f << ", " << (f == 6 || f == 7) << "\n";
    s_ << "    vmovi v20, 1.0\n    li r3, " << kOnes << "\n    vst v20, r3\n"
       << "    signal vpu, f8, 1\n    wait dma, f8, 1\n    vmovi v21, " << neutral << "\n"
       << "    vmovi v31, " << neutral << "\n";
    for (const std::string& line : p_.prologue) s_ << "    " << line << "\n";
    if (p_.index_table > 0) IndexTable();
    std::vector<Tile> tiles = Tiles(reduce);
    Fetch(tiles[0], 0);
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (i + 1 < tiles.size()) Fetch(tiles[i + 1], static_cast<int>((i + 1) % 2));
      Compute(tiles[i], static_cast<int>(i % 2), i);
    }
    // Once the VPU is past its last wait, the credits left are the last stores' arrivals.
    s_ << "    signal vpu, f8, 1\n    wait seq, f8, 1\n    wait seq, f6, 1\n    wait seq, f7, 1\n";
    return head_.str() + s_.str();
  }

 private:
  std::vector<Tile> Tiles(bool reduce) const {
    std::vector<Tile> out;
    const int64_t rbs = (p_.rows + kTileEdge - 1) / kTileEdge;
    const int64_t cbs = (p_.cols + kTileEdge - 1) / kTileEdge;
    const bool rows_outer = p_.reduce == TileReduce::kRows;
    for (int64_t a = 0; a < (rows_outer ? rbs : cbs); ++a)
      for (int64_t b = 0; b < (rows_outer ? cbs : rbs); ++b) {
        const int64_t rb = rows_outer ? a : b, cb = rows_outer ? b : a;
        Tile t;
        t.r0 = rb * kTileEdge, t.c0 = cb * kTileEdge;
        t.rows = std::min(kTileEdge, p_.rows - t.r0), t.cols = std::min(kTileEdge, p_.cols - t.c0);
        t.vregs = (t.rows + kTileSublanes - 1) / kTileSublanes;
        t.first_col = cb == 0, t.last_col = cb + 1 == cbs, t.last_row = rb + 1 == rbs;
        t.masked = reduce && (t.rows < t.vregs * kTileSublanes || t.cols < kTileEdge);
        out.push_back(t);
      }
    if (static_cast<int64_t>(out.size()) > kTileMaxTiles)
      throw std::invalid_argument("tile kernel: too many tiles");
    return out;
  }

  // Entry k in the first element of vreg k of a scratch area, gathered into one row by DMA.
  void IndexTable() {
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
       << ", f8\n    wait dma, f8, 1\n";
  }

  std::string Desc(const std::string& text) {
    auto [it, added] = descs_.emplace(text, "d" + std::to_string(descs_.size()));
    if (added) head_ << ".desc " << it->second << " " << text << "\n";
    return it->second;
  }

  // Staging buffers of `slot` receive the tile's operands (and its mask) by DMA.
  void Fetch(const Tile& t, int slot) {
    const int64_t base = slot * kSlotBytes;
    if (t.masked) {  // zero the mask, then copy 1.0 over the tile's valid elements
      s_ << "    vmovi v22, 0.0\n    li r3, " << base + 6 * kBufBytes << "\n";
      for (int64_t j = 0; j < t.vregs; ++j) s_ << "    vst v22, r3\n    addi r3, r3, 4096\n";
    }
    s_ << "    signal vpu, f" << 2 + slot << ", 1\n    wait dma, f" << 2 + slot << ", 1\n";
    if (t.masked)
      s_ << "    li r1, " << base + 6 * kBufBytes << "\n    li r2, " << kOnes
         << "\n    dma.vv r1, r2, "
         << Desc("rows=" + std::to_string(t.rows) + " row_bytes=" + std::to_string(t.cols * 4) +
                 " src_stride=0 dst_stride=512")
         << ", f" << slot << "\n";
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      const TileOperand& o = p_.inputs[i];
      const uint64_t at =
          o.address + static_cast<uint64_t>((t.r0 * o.row_stride + t.c0 * o.col_stride) * 4);
      std::string d =
          o.col_stride == 1
              ? "rows=" + std::to_string(t.rows) + " row_bytes=" + std::to_string(t.cols * 4) +
                    " src_stride=" + std::to_string(o.row_stride * 4) + " dst_stride=512"
              : "rows=" + std::to_string(t.cols) +
                    " row_bytes=4 src_stride=0 dst_stride=4 planes=" + std::to_string(t.rows) +
                    " src_plane_stride=" + std::to_string(o.row_stride * 4) +
                    " dst_plane_stride=512";
      s_ << "    li r1, " << base + static_cast<int64_t>(i) * kBufBytes << "\n"
         << LoadAddress(2, at, 3) << (o.vmem ? "    dma.vv" : "    dma.hv") << " r1, r2, "
         << Desc(d) << ", f" << slot << "\n";
    }
  }

  void Op(const std::string& d, const std::string& a, const std::string& b) {
    s_ << "    " << (p_.max ? "vmax " : "vadd ") << d << ", " << a << ", " << b << "\n";
  }

  // The VPU computes the tile from `slot`; results leave by DMA when the tile completes one.
  void Compute(const Tile& t, int slot, size_t index) {
    const int64_t base = slot * kSlotBytes, out = base + 7 * kBufBytes;
    const int dmas = static_cast<int>(p_.inputs.size()) + (t.masked ? 1 : 0);
    const bool stores =
        p_.reduce == TileReduce::kNone || (p_.reduce == TileReduce::kRows && t.last_col);
    if (dmas) s_ << "    wait vpu, f" << slot << ", " << dmas << "\n";
    if (stores) s_ << "    wait vpu, f" << 6 + slot << ", 1\n";
    if (p_.reduce == TileReduce::kCols && t.r0 == 0)
      s_ << "    vmovi v31, " << (p_.max ? "-inf" : "0.0") << "\n";
    for (size_t i = 0; i < p_.inputs.size(); ++i)
      s_ << "    li r" << kInPtr + i << ", " << base + static_cast<int64_t>(i) * kBufBytes << "\n";
    s_ << "    li r" << kMaskPtr << ", " << base + 6 * kBufBytes << "\n    li r" << kOutPtr << ", "
       << out << "\n    li r17, " << kRowAcc << "\n    li r15, 0\n    li r16, " << t.vregs << "\nt"
       << index << "_v:\n";
    for (size_t i = 0; i < p_.inputs.size(); ++i)
      s_ << "    vld v" << i << ", r" << kInPtr + i << "\n    addi r" << kInPtr + i << ", r"
         << kInPtr + i << ", 4096\n";
    for (const std::string& line : p_.body) s_ << "    " << line << "\n";
    std::string v = "v" + std::to_string(p_.result);
    if (t.masked) {
      s_ << "    vld v23, r" << kMaskPtr << "\n    vsel v22, v23, " << v << ", v21\n";
      v = "v22";
    }
    s_ << "    addi r" << kMaskPtr << ", r" << kMaskPtr << ", 4096\n";
    switch (p_.reduce) {
      case TileReduce::kNone:
        s_ << "    vst " << v << ", r" << kOutPtr << "\n";
        break;
      case TileReduce::kCols:
      case TileReduce::kAll:
        Op("v31", "v31", v);
        break;
      case TileReduce::kRows:
        s_ << "    vredlane." << (p_.max ? "max" : "sum") << " v22, " << v << "\n";
        if (!t.first_col) s_ << "    vld v20, r17\n", Op("v22", "v22", "v20");
        if (t.last_col) s_ << "    vmovi v20, " << Init() << "\n", Op("v22", "v22", "v20");
        s_ << "    vst v22, r" << (t.last_col ? kOutPtr : 17) << "\n";
        break;
    }
    s_ << "    addi r" << kOutPtr << ", r" << kOutPtr << ", 4096\n    addi r17, r17, 4096\n"
       << "    addi r15, r15, 1\n    blt r15, r16, t" << index << "_v\n";
    if (p_.reduce == TileReduce::kNone)
      Store(slot, out, t.r0 * p_.cols + t.c0,
            "rows=" + std::to_string(t.rows) + " row_bytes=" + std::to_string(t.cols * 4) +
                " src_stride=512 dst_stride=" + std::to_string(p_.cols * 4));
    if (p_.reduce == TileReduce::kRows && t.last_col)
      Store(slot, out, t.r0,
            "rows=" + std::to_string(t.rows) + " row_bytes=4 src_stride=512 dst_stride=4");
    const bool done_cols = p_.reduce == TileReduce::kCols && t.last_row;
    const bool done_all = p_.reduce == TileReduce::kAll && t.last_row && t.last_col;
    if (done_cols || done_all) {
      s_ << "    wait vpu, f" << 6 + slot << ", 1\n    vredsub." << (p_.max ? "max" : "sum")
         << " v22, v31\n";
      if (done_all) s_ << "    vredlane." << (p_.max ? "max" : "sum") << " v22, v22\n";
      s_ << "    vmovi v20, " << Init() << "\n";
      Op("v22", "v22", "v20");
      s_ << "    li r3, " << out << "\n    vst v22, r3\n";
      Store(slot, out, done_all ? 0 : t.c0,
            "rows=1 row_bytes=" + std::to_string(done_all ? 4 : t.cols * 4) +
                " src_stride=0 dst_stride=0");
    }
  }

  std::string Init() const {
    char text[40];
    std::snprintf(text, sizeof text, "%.9g", p_.init);
    return text;
  }

  // The output buffer of `slot` to HBM element `first` once the VPU has written it.
  void Store(int slot, int64_t out, int64_t first, const std::string& desc) {
    s_ << "    signal vpu, f" << 4 + slot << ", 1\n    wait dma, f" << 4 + slot << ", 1\n"
       << LoadAddress(18, p_.output + static_cast<uint64_t>(first * 4), 3) << "    li r19, " << out
       << "\n    dma.vh r18, r19, " << Desc(desc) << ", f" << 6 + slot << "\n";
  }

  const TileProgram& p_;
  std::ostringstream head_, s_;
  std::map<std::string, std::string> descs_;
};

}  // namespace

std::string TileKernel(const TileProgram& p) {
  if (p.inputs.size() > 6) throw std::invalid_argument("tile kernel: more than 6 inputs");
  if (p.body.size() > static_cast<size_t>(kTileMaxBodyOps) || p.rows <= 0 || p.cols <= 0)
    throw std::invalid_argument("tile kernel: body too long or empty space");
  if (p.index_table < 0 || p.index_table > kTileMaxIndex)
    throw std::invalid_argument("tile kernel: index table too long");
  for (const TileOperand& o : p.inputs)
    if (o.col_stride != 0 && o.col_stride != 1)
      throw std::invalid_argument("tile kernel: column stride must be 0 or 1");
  std::string code = Emitter(p).Run();
  return ".tag \"" + p.tag + "\"\n" + code;
}

}  // namespace tpusim::lowering
