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
#include "compiler/lowering/vpu/tile_emitter.h"

namespace tpusim::lowering {
namespace tiles {

std::string Emitter::Run() {
  const std::string neutral = !p_.max ? "0.0" : "-inf";
  s_ << "# tiled VPU kernel [" << p_.rows << "," << p_.cols << "]\n";
  // f8: the VPU's hand-overs to the DMA queue and, last, to the sequencer; f9: the index
  // table's copy (on f8, the sequencer's final wait could take its arrival: difftest seed
  // 341013 deadlocked when the collective stream's copies delayed the VPU).
  for (int f = 0; f < 10; ++f) s_ << "    sflag f" << f << ", " << (f == 6 || f == 7) << "\n";
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

int64_t Emitter::WideBlocks() const {
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

std::vector<Tile> Emitter::Tiles() const {
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

void Emitter::Steps() {
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

std::vector<int64_t> Emitter::Pointers(int64_t k) const {
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

int Emitter::PointerReg(size_t i) const {
  const size_t n = p_.inputs.size();
  return i < n ? kHbmPtr[i] : i == n ? kOutHbm : kIndexOffset;
}

void Emitter::SetPointers(const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    s_ << assembly::LoadAddress(PointerReg(i), static_cast<uint64_t>(v[i]), 3);
}

std::string Emitter::Advance(const std::vector<int64_t>& delta) const {
  std::ostringstream s;
  for (size_t i = 0; i < delta.size(); ++i) {
    const int r = PointerReg(i);
    if (delta[i]) s << "    addi r" << r << ", r" << r << ", " << delta[i] << "\n";
  }
  return s.str();
}

bool Emitter::IndexOffsets() const {
  return std::any_of(p_.inputs.begin(), p_.inputs.end(),
                     [](const TileOperand& o) { return o.index != TileIndex::kNone; });
}

int64_t Emitter::IndexOffset(const Tile& t) const {
  for (const TileOperand& o : p_.inputs)
    if (o.index != TileIndex::kNone) return o.index == TileIndex::kColumn ? t.c0 : t.r0;
  return 0;
}

}  // namespace tiles

using tiles::Emitter;
using tiles::kIndexScratch;
using tiles::kVregBytes;
using tiles::Layout;

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
