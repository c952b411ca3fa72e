#include "compiler/lowering/vpu/tile_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

constexpr int64_t kVregBytes = kTileSublanes * kTileEdge * 4;
// Vregs whose first element is k, gathered into the index table before any tile arrives:
// they borrow the staging slots.
constexpr int64_t kIndexScratch = 0;
constexpr int kMaskPtr = 13, kOutPtr = 14;  // VMEM buffers of a tile's vloop
constexpr int kOutHbm = 26;                 // this tile's output
constexpr int kTrip = 27, kTrips = 28;      // a run's loop counter and trip count
constexpr int kIndexOffset = 18;            // the tile's first column or row (TileIndex)
// Per input: the VMEM pointer of its staging buffer in the vloop, and the HBM (or VMEM)
// address of the next tile's operand.
constexpr int kInPtr[kTileMaxInputs] = {7, 8, 9, 10, 11, 12, 5, 6, 15};
constexpr int kHbmPtr[kTileMaxInputs] = {20, 21, 22, 23, 24, 25, 29, 30, 31};
// v20: scratch (in an elementwise vloop: vperm's lane-0 index), v21: the neutral element, v22: the
// masked result, v23: the mask.

// Where a program's buffers sit in VMEM: two staging slots of `buffers` tiles each (inputs,
// mask, output; at least 8 so programs of up to 6 inputs keep one layout), a vreg of 1.0
// and the row accumulator, all below the index table. Tiles shrink (by halves) until they fit.
struct Layout {
  int64_t vregs = kTileVregs, buffers = 8;
  int64_t buf_bytes() const { return vregs * kVregBytes; }
  int64_t slot_bytes() const { return buffers * buf_bytes(); }
  int64_t rows() const { return vregs * kTileSublanes; }
  int64_t mask() const { return buffers - 2; }
  int64_t out() const { return buffers - 1; }
  int64_t ones() const { return 2 * slot_bytes(); }        // a vreg of 1.0
  int64_t row_acc() const { return ones() + kVregBytes; }  // partial row results
  int64_t end() const { return row_acc() + buf_bytes(); }

  explicit Layout(size_t inputs) : buffers(std::max<int64_t>(8, static_cast<int64_t>(inputs) + 2)) {
    while (vregs > kTileSublanes && end() > static_cast<int64_t>(kTileIndexTable)) vregs /= 2;
  }
};

// A tile is `blocks` column blocks of 128 side by side (more than one only in a wide column
// reduction, WideBlocks); each block's rows fill `vregs` vregs.
struct Tile {
  int64_t group = 0, r0 = 0, c0 = 0, rows = 0, cols = 0, vregs = 0, blocks = 1;
  int64_t block_cols() const { return cols / blocks; }
  bool first_col = true, last_col = true, last_row = true, masked = false;
};

class Emitter {
 public:
  explicit Emitter(const TileProgram& p) : p_(p), l_(p.inputs.size()), blocks_(WideBlocks()) {}

  std::string Run() {
    const std::string neutral = !p_.max ? "0.0" : "-inf";
    s_ << "# tiled VPU kernel [" << p_.rows << "," << p_.cols << "]\n";
    for (int f = 0; f < 9; ++f) s_ << "    sflag f" << f << ", " << (f == 6 || f == 7) << "\n";
    s_ << "    vmovi v20, 1.0\n    li r3, " << l_.ones() << "\n    vst v20, r3\n"
       << "    signal vpu, f8, 1\n    wait dma, f8, 1\n    vmovi v21, " << neutral << "\n"
       << "    vmovi v31, " << neutral << "\n";
    for (const std::string& line : p_.prologue) s_ << "    " << line << "\n";
    if (p_.index_table > 0) IndexTable();
    tiles_ = Tiles();
    SetPointers(Pointers(-1));
    s_ << Fetch(tiles_[0], 0);
    Steps();
    // Once the VPU is past its last wait, the credits left are the last stores' arrivals.
    s_ << "    signal vpu, f8, 1\n    wait seq, f8, 1\n    wait seq, f6, 1\n    wait seq, f7, 1\n";
    return head_.str() + s_.str();
  }

 private:
  // Column blocks per tile: a column reduction of whole blocks whose rows fit one tile (the
  // mean over a 7x7 image's pixels: 49 rows, 7 vregs) takes as many blocks per tile as its
  // staging buffer holds, moved as the planes of one DMA per operand. Each copy's fixed
  // start-up is then paid once per tile of blocks, not once per 25 KiB block (the streams'
  // chunk-size trade-off, docs/fidelity.md mechanism 8). 1 otherwise.
  int64_t WideBlocks() const {
    if (p_.reduce != TileReduce::kCols || p_.cols % kTileEdge != 0 || p_.rows > l_.rows()) return 1;
    for (const TileOperand& o : p_.inputs)
      if (o.vmem || o.col_stride != 1 || o.row_stride == 0 || o.period != 0 ||
          o.index != TileIndex::kNone)
        return 1;
    const int64_t vregs = (p_.rows + kTileSublanes - 1) / kTileSublanes, cbs = p_.cols / kTileEdge;
    int64_t k = std::min(cbs, l_.vregs / vregs);
    while (k > 1 && cbs % k != 0) --k;
    return std::max<int64_t>(k, 1);
  }

  std::vector<Tile> Tiles() const {
    std::vector<Tile> out;
    const int64_t tile_rows = l_.rows(), rbs = (p_.rows + tile_rows - 1) / tile_rows;
    const int64_t tile_cols = blocks_ * kTileEdge, cbs = (p_.cols + tile_cols - 1) / tile_cols;
    const bool rows_outer = p_.reduce == TileReduce::kRows;
    const bool reduce = p_.reduce != TileReduce::kNone;
    // Groups go outermost where partial results span a row of tiles (kRows, kAll), else
    // inside the column blocks, so a column block's tiles advance evenly through the groups.
    const bool groups_outer = rows_outer || p_.reduce == TileReduce::kAll;
    const int64_t outer = groups_outer ? p_.groups : 1, inner = groups_outer ? 1 : p_.groups;
    for (int64_t go = 0; go < outer; ++go)
      for (int64_t a = 0; a < (rows_outer ? rbs : cbs); ++a)
        for (int64_t gi = 0; gi < inner; ++gi)
          for (int64_t b = 0; b < (rows_outer ? cbs : rbs); ++b) {
            const int64_t rb = rows_outer ? a : b, cb = rows_outer ? b : a;
            Tile t;
            t.group = go + gi;
            t.r0 = rb * tile_rows, t.c0 = cb * tile_cols;
            t.rows = std::min(tile_rows, p_.rows - t.r0),
            t.cols = std::min(tile_cols, p_.cols - t.c0), t.blocks = blocks_;
            t.vregs = (t.rows + kTileSublanes - 1) / kTileSublanes;
            t.first_col = cb == 0, t.last_col = cb + 1 == cbs, t.last_row = rb + 1 == rbs;
            t.masked = reduce && (t.rows < t.vregs * kTileSublanes || t.cols < kTileEdge);
            out.push_back(t);
          }
    return out;
  }

  // Step k fetches tile k + 1 and computes tile k. Where the text of steps repeats with
  // period two (the two staging slots) and the HBM pointers advance evenly, the steps
  // become a loop over pairs; elsewhere each step is written out.
  void Steps() {
    const size_t n = tiles_.size();
    std::vector<std::string> text(n);
    for (size_t k = 0; k < n; ++k)
      text[k] = (k + 1 < n ? Fetch(tiles_[k + 1], static_cast<int>((k + 1) % 2)) : "") +
                Compute(tiles_[k], static_cast<int>(k % 2));
    for (size_t k = 0; k < n;) {
      size_t j = 1;
      std::vector<int64_t> delta;
      if (k + 3 < n) {
        delta = Pointers(static_cast<int64_t>(k + 1));
        const std::vector<int64_t> first = Pointers(static_cast<int64_t>(k));
        bool fits = true;
        for (size_t i = 0; i < delta.size(); ++i) {
          delta[i] -= first[i];
          fits = fits && delta[i] >= std::numeric_limits<int32_t>::min() &&
                 delta[i] <= std::numeric_limits<int32_t>::max();
        }
        for (j = fits ? 2 : 1; fits && k + j < n && text[k + j] == text[k + j % 2]; ++j) {
          const std::vector<int64_t> at = Pointers(static_cast<int64_t>(k + j));
          bool even = true;
          for (size_t i = 0; i < at.size(); ++i)
            even = even && at[i] == first[i] + static_cast<int64_t>(j) * delta[i];
          if (!even) break;
        }
      }
      SetPointers(Pointers(static_cast<int64_t>(k)));
      if (j < 4) {
        s_ << text[k++];
        continue;
      }
      const size_t pairs = j / 2;
      const std::string label = "run" + std::to_string(runs_++);
      s_ << "    li r" << kTrip << ", 0\n    li r" << kTrips << ", " << pairs << "\n"
         << label << ":\n"
         << text[k] << Advance(delta) << text[k + 1] << Advance(delta) << "    addi r" << kTrip
         << ", r" << kTrip << ", 1\n    blt r" << kTrip << ", r" << kTrips << ", " << label << "\n";
      k += 2 * pairs;
    }
  }

  // HBM (or VMEM) addresses step k uses: the inputs of tile k + 1, the output of tile k.
  // Then, with index operands, the index of tile k's first column or row (TileIndex).
  std::vector<int64_t> Pointers(int64_t k) const {
    const size_t n = p_.inputs.size();
    std::vector<int64_t> v(n + (IndexOffsets() ? 2 : 1), 0);
    if (k + 1 < static_cast<int64_t>(tiles_.size())) {
      const Tile& t = tiles_[static_cast<size_t>(k + 1)];
      for (size_t i = 0; i < p_.inputs.size(); ++i) {
        const TileOperand& o = p_.inputs[i];
        const int64_t r = o.index != TileIndex::kNone ? 0 : o.period > 0 ? t.r0 % o.period : t.r0;
        const int64_t c = o.index != TileIndex::kNone ? 0 : t.c0;
        v[i] = static_cast<int64_t>(o.address) +
               (t.group * o.group_stride + r * o.row_stride + c * o.col_stride) * 4;
      }
    }
    if (k >= 0) {
      const Tile& t = tiles_[static_cast<size_t>(k)];
      const int64_t first = p_.reduce == TileReduce::kNone   ? t.r0 * p_.cols + t.c0
                            : p_.reduce == TileReduce::kRows ? t.r0
                            : p_.reduce == TileReduce::kCols ? t.c0
                                                             : 0;
      v[n] = static_cast<int64_t>(p_.output) + (t.group * p_.output_group_stride + first) * 4;
      if (IndexOffsets()) v[n + 1] = IndexOffset(t);
    }
    return v;
  }

  // The register holding entry i of Pointers().
  int PointerReg(size_t i) const {
    const size_t n = p_.inputs.size();
    return i < n ? kHbmPtr[i] : i == n ? kOutHbm : kIndexOffset;
  }

  void SetPointers(const std::vector<int64_t>& v) {
    for (size_t i = 0; i < v.size(); ++i)
      s_ << assembly::LoadAddress(PointerReg(i), static_cast<uint64_t>(v[i]), 3);
  }

  std::string Advance(const std::vector<int64_t>& delta) const {
    std::ostringstream s;
    for (size_t i = 0; i < delta.size(); ++i) {
      const int r = PointerReg(i);
      if (delta[i]) s << "    addi r" << r << ", r" << r << ", " << delta[i] << "\n";
    }
    return s.str();
  }

  bool IndexOffsets() const {
    return std::any_of(p_.inputs.begin(), p_.inputs.end(),
                       [](const TileOperand& o) { return o.index != TileIndex::kNone; });
  }

  // What an index operand adds to its table entries in tile `t` (one kind per program).
  int64_t IndexOffset(const Tile& t) const {
    for (const TileOperand& o : p_.inputs)
      if (o.index != TileIndex::kNone) return o.index == TileIndex::kColumn ? t.c0 : t.r0;
    return 0;
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

  // Staging buffers of `slot` receive the tile's operands (and its mask) by DMA from the
  // addresses in the input pointer registers.
  std::string Fetch(const Tile& t, int slot) {
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

  std::string Op(const std::string& d, const std::string& a, const std::string& b) const {
    return (p_.max ? "vmax " : "vadd ") + d + ", " + a + ", " + b;
  }

  // What one vloop trip does to vreg j of the tile: load, compute, mask, store or combine.
  std::vector<std::string> Trip(const Tile& t) const {
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

  // A tile of several column blocks of a column reduction (WideBlocks): each block is summed
  // over its rows as a one-block tile is, its row of results goes to vreg b of the output
  // buffer, and one DMA stores the blocks' rows side by side.
  std::string ComputeBlocks(const Tile& t, int slot) {
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

  // The VPU computes the tile from `slot`; results leave by DMA when the tile completes one.
  std::string Compute(const Tile& t, int slot) {
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
      s << "    li r" << kInPtr[i] << ", " << base + static_cast<int64_t>(i) * l_.buf_bytes()
        << "\n";
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

  bool LaneBroadcasts() const {
    return std::any_of(p_.inputs.begin(), p_.inputs.end(),
                       [](const TileOperand& o) { return o.col_stride == 0; });
  }

  std::string Init() const {
    char text[40];
    std::snprintf(text, sizeof text, "%.9g", p_.init);
    return text;
  }

  // The output buffer of `slot` to the output pointer once the VPU has written it.
  std::string Store(int slot, int64_t out, const std::string& desc) {
    std::ostringstream s;
    s << "    signal vpu, f" << 4 + slot << ", 1\n    wait dma, f" << 4 + slot << ", 1\n"
      << "    li r19, " << out << "\n    " << (p_.output_vmem ? "dma.vv" : "dma.vh") << " r"
      << kOutHbm << ", r19, " << Desc(desc) << ", f" << 6 + slot << "\n";
    return s.str();
  }

  const TileProgram& p_;
  const Layout l_;
  const int64_t blocks_;  // WideBlocks()
  std::vector<Tile> tiles_;
  std::ostringstream head_, s_;
  std::map<std::string, std::string> descs_;
  int runs_ = 0;
};

}  // namespace

bool BodyFitsTileRegisters(const std::vector<std::string>& body) {
  for (const std::string& line : body) {
    const size_t v = line.find(" v");
    if (v == std::string::npos || std::atoi(line.c_str() + v + 2) >= kTileEndTemps) return false;
  }
  return true;
}

std::string TileKernel(const TileProgram& p) {
  if (p.inputs.size() > static_cast<size_t>(kTileMaxInputs))
    throw std::invalid_argument("tile kernel: more than " + std::to_string(kTileMaxInputs) +
                                " inputs");
  if (!BodyFitsTileRegisters(p.body) || p.rows <= 0 || p.cols <= 0)
    throw std::invalid_argument("tile kernel: body writes the kernel's registers or empty space");
  if (p.groups < 1) throw std::invalid_argument("tile kernel: no groups");
  if (p.index_table < 0 || p.index_table > kTileMaxIndex ||
      kIndexScratch + p.index_table * kVregBytes > Layout(p.inputs.size()).ones())
    throw std::invalid_argument("tile kernel: index table too long");
  const int64_t tile_rows = Layout(p.inputs.size()).rows();
  for (const TileOperand& o : p.inputs) {
    if (o.col_stride != 0 && o.col_stride != 1)
      throw std::invalid_argument("tile kernel: column stride must be 0 or 1");
    if (o.period < 0 || (o.period > 0 && (p.rows % o.period != 0 || (o.period % tile_rows != 0 &&
                                                                     tile_rows % o.period != 0))))
      throw std::invalid_argument(
          "tile kernel: a row period must divide the rows and be a "
          "multiple or a divisor of the tile rows");
  }
  const bool lane_broadcast = std::any_of(p.inputs.begin(), p.inputs.end(),
                                          [](const TileOperand& o) { return o.col_stride == 0; });
  if (lane_broadcast && p.reduce == TileReduce::kRows)  // both use v20 in the vloop
    throw std::invalid_argument("tile kernel: a row reduction of a broadcast column");
  int index_kinds = 0;
  for (const TileIndex kind : {TileIndex::kColumn, TileIndex::kRow})
    index_kinds += std::any_of(p.inputs.begin(), p.inputs.end(),
                               [kind](const TileOperand& o) { return o.index == kind; });
  if (index_kinds > 1 || (index_kinds && p.reduce != TileReduce::kNone))  // v21: one offset
    throw std::invalid_argument("tile kernel: index operands of two kinds, or in a reduction");
  std::string code = Emitter(p).Run();
  return ".tag \"" + p.tag + "\"\n" + code;
}

}  // namespace tpusim::lowering
