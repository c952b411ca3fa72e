// Internal to the tiled VPU kernel (tile_kernel.h): its VMEM layout, its tiles and the
// emitter that writes the program, split over tile_kernel.cc (the tiles and the loop over
// them) and tile_code.cc (the code of one tile: fetch, compute, store).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/lowering/vpu/tile_kernel.h"

namespace tpusim::lowering::tiles {

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
  std::string Run();

 private:
  // Column blocks per tile: a column reduction of whole blocks whose rows fit one tile (the
  // mean over a 7x7 image's pixels: 49 rows, 7 vregs) takes as many blocks per tile as its
  // staging buffer holds, moved as the planes of one DMA per operand. Each copy's fixed
  // start-up is then paid once per tile of blocks, not once per 25 KiB block (the streams'
  // chunk-size trade-off, docs/fidelity.md mechanism 8). 1 otherwise.
  int64_t WideBlocks() const;
  std::vector<Tile> Tiles() const;
  // Step k fetches tile k + 1 and computes tile k. Where the text of steps repeats with
  // period two (the two staging slots) and the HBM pointers advance evenly, the steps
  // become a loop over pairs; elsewhere each step is written out.
  void Steps();
  // HBM (or VMEM) addresses step k uses: the inputs of tile k + 1, the output of tile k.
  // Then, with index operands, the index of tile k's first column or row (TileIndex).
  std::vector<int64_t> Pointers(int64_t k) const;
  // The register holding entry i of Pointers().
  int PointerReg(size_t i) const;
  void SetPointers(const std::vector<int64_t>& v);
  std::string Advance(const std::vector<int64_t>& delta) const;
  bool IndexOffsets() const;
  // What an index operand adds to its table entries in tile `t` (one kind per program).
  int64_t IndexOffset(const Tile& t) const;
  // Entry k in the first element of vreg k of a scratch area, gathered into one row by DMA.
  void IndexTable();
  std::string Desc(const std::string& text);
  // Staging buffers of `slot` receive the tile's operands (and its mask) by DMA from the
  // addresses in the input pointer registers.
  std::string Fetch(const Tile& t, int slot);
  std::string Op(const std::string& d, const std::string& a, const std::string& b) const;
  // What one vloop trip does to vreg j of the tile: load, compute, mask, store or combine.
  std::vector<std::string> Trip(const Tile& t) const;
  // A tile of several column blocks of a column reduction (WideBlocks): each block is summed
  // over its rows as a one-block tile is, its row of results goes to vreg b of the output
  // buffer, and one DMA stores the blocks' rows side by side.
  std::string ComputeBlocks(const Tile& t, int slot);
  // The VPU computes the tile from `slot`; results leave by DMA when the tile completes one.
  std::string Compute(const Tile& t, int slot);
  bool LaneBroadcasts() const;
  std::string Init() const;
  // The output buffer of `slot` to the output pointer once the VPU has written it.
  std::string Store(int slot, int64_t out, const std::string& desc);

  const TileProgram& p_;
  const Layout l_;
  const int64_t blocks_;  // WideBlocks()
  std::vector<Tile> tiles_;
  std::ostringstream head_, s_;
  std::map<std::string, std::string> descs_;
  int runs_ = 0;
};

}  // namespace tpusim::lowering::tiles
