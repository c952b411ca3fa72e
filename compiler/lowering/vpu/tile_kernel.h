// The VPU kernel for elementwise work over a 2-D [rows, cols] space of 32-bit elements
// whose operands are not all flat copies of the result: row or column vectors and scalars
// broadcast into it, edges that are not whole vregs, and reductions over rows, columns or
// everything. Tiles of up to 1024 rows x 128 columns move by strided DMA, so every vreg
// holds the tile's elements at their [row, col] positions and the fused body computes them exactly
// (one `vloop` per tile); results go back by strided DMA. A broadcast operand moves once per tile,
// not once per element it fills: a repeated row as one vreg, a column (or scalar) as one value per
// row that `vperm` spreads over the lanes. Runs of alike tiles are a scalar loop whose HBM pointers
// advance in registers, so the code does not grow with the number of tiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::lowering {

inline constexpr int64_t kTileEdge = 128;    // lanes of a vreg; columns of a tile
inline constexpr int64_t kTileSublanes = 8;  // rows of a vreg
inline constexpr int64_t kTileVregs = 128;   // vregs of a tile at most: 1024 rows
// Inputs arrive in v0..; the body's temps follow from v6 (or after the inputs, when there
// are more), up to v19: v20..v23 are the kernel's. Beyond 7 inputs tiles hold fewer rows,
// so that the staging buffers fit in VMEM below the index table.
inline constexpr int kTileMaxInputs = 9;
inline constexpr int kTileFirstTemp = 6, kTileEndTemps = 20;
// Whether every instruction of `body` writes a register below kTileEndTemps (inputs and
// temps): a body may be any length, as long as its values fit there.
bool BodyFitsTileRegisters(const std::vector<std::string>& body);

// Tiles of an op's result whose tiles are thinner than a vreg (a 1-D result is tiles of one
// row): each pays a DMA round trip for at most 4 KiB, so beyond this many tile_ops.cc leaves
// the result to the timing-only VPU stream (BERT-base's f32[30522] Adam updates: 239 tiles, 0.19 ms
// each against 2 us streamed).
inline constexpr int64_t kTileMaxThinTiles = 16;

inline constexpr int64_t kTileMaxIndex = 1024;         // entries of the index table
inline constexpr uint64_t kTileIndexTable = 10 << 20;  // VMEM: the index table (iota)

// Element (r, c) of an operand lives at address + (r' * row_stride + c * col_stride) * 4,
// r' = r mod period when the operand's rows repeat with that period (a matrix broadcast along
// leading dimensions), else r; col_stride is 1 (a row of the operand) or 0 (broadcast along
// columns). A `vmem` operand is the kernel's own index table. In group g of a grouped program
// the operand starts group_stride * g elements further.
// An index operand reads the kernel's index table and adds the tile's first column
// (kColumn: the table holds the lane index 0..127) or first row (kRow: the row within the
// tile), so an iota of any length needs a table of at most kTileMaxIndex entries.
enum class TileIndex { kNone, kColumn, kRow };

struct TileOperand {
  uint64_t address = 0;
  int64_t row_stride = 0, col_stride = 1;
  bool vmem = false;
  int64_t group_stride = 0;
  int64_t period = 0;  // rows; 0: no repetition. A multiple or a divisor of the tile rows.
  TileIndex index = TileIndex::kNone;
};

enum class TileReduce {
  kNone,  // result [rows, cols]
  kRows,  // over columns: result [rows]
  kCols,  // over rows: result [cols]
  kAll,   // over both: a scalar
};

struct TileProgram {
  int64_t rows = 1, cols = 1;
  std::vector<TileOperand> inputs;          // into v0.. for each vreg (kTileMaxInputs)
  std::vector<std::string> prologue, body;  // vpu_body.h; the value ends in `result`
  int result = 0;
  TileReduce reduce = TileReduce::kNone;
  bool max = false;     // a reduction's combiner: max (else add)
  double init = 0;      // the reduction's initial value, combined last
  uint64_t output = 0;  // HBM, row-major
  // Entries 0..index_table-1 written to kTileIndexTable first, as s32 bit patterns when
  // `index_bits` (else f32 values): what an iota reads (0: no table).
  int64_t index_table = 0;
  bool index_bits = false;
  bool output_vmem = false;  // `output` is a VMEM address (a per-column scratch vector)
  // `groups` independent [rows, cols] problems one after another (a reduction over the
  // middle dimensions of [groups, rows, cols]; a [groups, cols] value broadcast over the
  // middle): group g's output starts output_group_stride * g elements further.
  int64_t groups = 1, output_group_stride = 0;
  std::string tag;
};

// Assembly of the kernel; throws std::invalid_argument for more than kTileMaxInputs inputs,
// a body writing registers from kTileEndTemps up, or column strides other than 0 and 1.
std::string TileKernel(const TileProgram& p);

}  // namespace tpusim::lowering
