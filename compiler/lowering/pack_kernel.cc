#include "compiler/lowering/pack_kernel.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "compiler/lowering/asm_util.h"

namespace tpusim::lowering {
namespace {

constexpr int kVregsPerBlock = kPackEdge / kPackSublanes;  // 16 vregs hold a 128x128 block
constexpr int kTransposed = 16;                            // vxpose writes v16..v31

struct Block {
  int64_t rb = 0, cb = 0;
  int64_t valid_rows = 0, valid_cols = 0, store_rows = 0;
  bool partial() const { return valid_rows < store_rows || valid_cols < kPackEdge; }
};

}  // namespace

int64_t PackedBytes(const PackSource& src, int64_t padded_rows) {
  const int64_t col_blocks = (src.cols + kPackEdge - 1) / kPackEdge;
  return col_blocks * padded_rows * kPackedRowBytes;
}

std::string PackKernel(const PackSource& src, const PackTarget& dst, uint64_t stage,
                       const std::string& id) {
  const int64_t e = src.bf16 ? 2 : 4;
  const int64_t minor = src.transposed ? src.rows : src.cols;  // HBM row length
  if (dst.padded_rows % kPackSublanes || dst.padded_rows < src.rows || src.rows <= 0 ||
      src.cols <= 0)
    throw std::invalid_argument("pack: padded rows must be a multiple of 8 covering the rows");
  if ((minor * e) % 4 || src.address % 4)
    throw std::invalid_argument("pack: bf16 rows of odd length are not 4-byte aligned for DMA");
  std::vector<Block> blocks;
  for (int64_t rb = 0; rb * kPackEdge < dst.padded_rows; ++rb)
    for (int64_t cb = 0; cb * kPackEdge < src.cols; ++cb) {
      Block b{rb, cb};
      b.valid_rows = std::clamp<int64_t>(src.rows - rb * kPackEdge, 0, kPackEdge);
      b.valid_cols = std::min(kPackEdge, src.cols - cb * kPackEdge);
      b.store_rows = std::min(kPackEdge, dst.padded_rows - rb * kPackEdge);
      const int64_t run = src.transposed ? b.valid_rows : b.valid_cols;  // bytes per DMA row
      if ((run * e) % 4) throw std::invalid_argument("pack: block rows not 4-byte aligned");
      blocks.push_back(b);
    }
  std::ostringstream head, s;                                // descriptors first, then the code
  std::map<std::pair<int64_t, int64_t>, std::string> descs;  // (rows, row bytes) -> name
  auto desc = [&](int64_t rows, int64_t row_bytes) {
    auto [it, added] =
        descs.emplace(std::make_pair(rows, row_bytes), id + "blk" + std::to_string(descs.size()));
    if (added)
      head << ".desc " << it->second << " rows=" << rows << " row_bytes=" << row_bytes
           << " src_stride=" << minor * e << " dst_stride=" << kPackEdge * e << "\n";
    return it->second;
  };
  // Zero-fills staging buffer `slot` when the block is partial, then DMAs the block in.
  auto fetch = [&](const Block& b, int slot) {
    const uint64_t buf = stage + static_cast<uint64_t>(slot) * kPackStageBytes;
    if (b.partial()) {
      s << "    vmovi v16, 0.0\n    li r3, " << buf << "\n";
      for (int j = 0; j < kVregsPerBlock * e / 4; ++j)  // the staging block, as f32 vregs
        s << "    vst v16, r3\n    addi r3, r3, 4096\n";
    }
    if (b.valid_rows == 0) return;
    const int64_t rows = src.transposed ? b.valid_cols : b.valid_rows;
    const int64_t run = src.transposed ? b.valid_rows : b.valid_cols;
    const int64_t first = src.transposed ? b.cb * kPackEdge * src.rows + b.rb * kPackEdge
                                         : b.rb * kPackEdge * src.cols + b.cb * kPackEdge;
    const std::string d = desc(rows, run * e);
    s << "    signal vpu, f" << 2 + slot << ", 1\n    wait dma, f" << 2 + slot << ", 1\n"
      << "    li r1, " << buf << "\n"
      << LoadAddress(2, src.address + static_cast<uint64_t>(first * e), 3) << "    dma.hv r1, r2, "
      << d << ", f" << slot << "\n";
  };
  // Loads the staged block, transposes it if needed, stores its rows as bf16.
  auto store = [&](const Block& b, int slot) {
    const uint64_t buf = stage + static_cast<uint64_t>(slot) * kPackStageBytes;
    if (b.valid_rows > 0) s << "    wait vpu, f" << slot << ", 1\n";
    s << "    li r3, " << buf << "\n";
    for (int j = 0; j < kVregsPerBlock; ++j)
      s << (src.bf16 ? "    vld.bf16 v" : "    vld v") << j << ", r3\n    addi r3, r3, "
        << kPackSublanes * kPackEdge * e << "\n";
    int first = 0;
    if (src.transposed) s << "    vxpose v" << kTransposed << ", v0\n", first = kTransposed;
    const uint64_t out =
        dst.base +
        static_cast<uint64_t>((b.cb * dst.padded_rows + b.rb * kPackEdge) * kPackedRowBytes);
    s << "    li r3, " << out << "\n";
    for (int64_t j = 0; j < b.store_rows / kPackSublanes; ++j)
      s << "    vst.bf16 v" << first + j << ", r3\n    addi r3, r3, "
        << kPackSublanes * kPackedRowBytes << "\n";
  };
  // Block i+1 is fetched into the other buffer while the VPU packs block i.
  fetch(blocks[0], 0);
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i + 1 < blocks.size()) fetch(blocks[i + 1], static_cast<int>((i + 1) % 2));
    store(blocks[i], static_cast<int>(i % 2));
  }
  return head.str() + s.str();
}

}  // namespace tpusim::lowering
