#include "compiler/lowering/dot/pack_kernel.h"

#include <vector>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The sizes a dimension of `total` in chunks of `chunk` takes: the full one, the last one.
std::vector<int64_t> Sizes(int64_t total, int64_t chunk) {
  if (total <= chunk) return {total};
  if (total % chunk == 0) return {chunk};
  return {chunk, total - (CeilDiv(total, chunk) - 1) * chunk};
}

// Runs body(size) for each size, branching on index_reg == last index when there are two.
void Branch(StreamAsm& s, int index_reg, int64_t total, int64_t chunk,
            const std::function<void(int64_t)>& body) {
  const std::vector<int64_t> sizes = Sizes(total, chunk);
  if (sizes.size() == 1) return body(sizes[0]);
  const std::string last = s.Label("last_"), done = s.Label("sized_");
  s.code << "    li r" << kCaseScratch << ", " << CeilDiv(total, chunk) - 1 << "\n    beq r"
         << index_reg << ", r" << kCaseScratch << ", " << last << "\n";
  body(sizes[0]);
  s.code << "    jmp " << done << "\n" << last << ":\n";
  body(sizes[1]);
  s.code << done << ":\n";
}

uint64_t Buffer(uint64_t base, int64_t bytes, int parity) {
  return base + static_cast<uint64_t>(parity * bytes);
}

}  // namespace

std::string StreamAsm::Desc(int64_t rows, int64_t row_bytes, int64_t src_stride, int64_t dst_stride,
                            int64_t planes, int64_t src_plane_stride, int64_t dst_plane_stride) {
  auto key = std::make_tuple(rows, row_bytes, src_stride, dst_stride, planes, src_plane_stride,
                             dst_plane_stride);
  auto [it, added] = descs_.emplace(key, "sd" + std::to_string(descs_.size()));
  if (added) {
    head_ << ".desc " << it->second << " rows=" << rows << " row_bytes=" << row_bytes
          << " src_stride=" << src_stride << " dst_stride=" << dst_stride;
    if (planes > 1)
      head_ << " planes=" << planes << " src_plane_stride=" << src_plane_stride
            << " dst_plane_stride=" << dst_plane_stride;
    head_ << "\n";
  }
  return it->second;
}

void StreamAsm::MulAdd(int rd, int rs, int64_t factor) {
  if (factor < (int64_t{1} << 31)) {
    code << "    muli r3, r" << rs << ", " << factor << "\n";
  } else {
    code << assembly::LoadAddress(3, static_cast<uint64_t>(factor), 2) << "    mul r3, r" << rs
         << ", r3\n";
  }
  code << "    add r" << rd << ", r" << rd << ", r3\n";
}

void ChunkCases(StreamAsm& s, const DotOperand& x, int row_reg, int col_reg,
                const std::function<void(int64_t rows, int64_t cols)>& body) {
  Branch(s, row_reg, x.rows, x.chunk_rows, [&](int64_t rows) {
    Branch(s, col_reg, x.cols, x.chunk_cols, [&](int64_t cols) { body(rows, cols); });
  });
}

int ChunkCopies(int64_t cols) { return (cols >= kPackEdge ? 1 : 0) + (cols % kPackEdge ? 1 : 0); }

void FetchChunk(StreamAsm& s, const DotOperand& x, int parity, int row_reg, int col_reg,
                int64_t rows, int64_t cols, int loaded_flag) {
  const int64_t e = x.elem, plane = x.chunk_rows * kPackEdge * e,
                vreg = kPackSublanes * kPackEdge * e;
  const uint64_t stage = Buffer(x.stage, x.stage_bytes(), parity);
  const std::string zero_store = e == 2 ? "vsts.bf16" : "vsts";
  s.code << assembly::LoadAddress(1, x.hbm, 2);
  if (x.batch_word >= 0) s.code << "    sld r2, r0, " << x.batch_word << "\n    add r1, r1, r2\n";
  s.MulAdd(1, row_reg, x.chunk_rows * x.ld * e);
  s.MulAdd(1, col_reg, x.chunk_cols * e);
  // K padding must be zeros (the MXU sums over it): the K edge plane, or the rows past K.
  if (!x.k_in_rows && cols % kPackEdge) {
    s.code << "    vmovi v0, 0.0\n    li r29, "
           << stage + static_cast<uint64_t>(cols / kPackEdge * plane) << "\n    li r30, "
           << x.chunk_rows / kPackSublanes << "\n    vloop r30, 1\n    " << zero_store
           << " v0, r29, " << vreg << "\n";
  } else if (x.k_in_rows && rows % kPackEdge) {
    const int64_t z0 = rows / kPackSublanes * kPackSublanes;
    const int64_t z1 = CeilDiv(rows, kPackEdge) * kPackEdge;
    const std::string loop = s.Label("zero_");
    s.code << "    vmovi v0, 0.0\n    li r29, " << stage + static_cast<uint64_t>(z0 * kPackEdge * e)
           << "\n    li r30, " << (z1 - z0) / kPackSublanes << "\n    li r31, 0\n    li r27, "
           << CeilDiv(cols, kPackEdge) << "\n"
           << loop << ":\n    vloop r30, 1\n    " << zero_store << " v0, r29, " << vreg
           << "\n    addi r29, r29, " << plane << "\n    addi r31, r31, 1\n    blt r31, r27, "
           << loop << "\n";
  }
  s.code << "    signal vpu, f" << kStageFreeFlag << ", 1\n    wait dma, f" << kStageFreeFlag
         << ", 1\n    li r2, " << stage << "\n";
  const int64_t full = cols / kPackEdge, edge = cols % kPackEdge;
  if (full > 0)
    s.code << "    dma.hv r2, r1, "
           << s.Desc(rows, kPackEdge * e, x.ld * e, kPackEdge * e, full, kPackEdge * e, plane)
           << ", f" << loaded_flag << "\n";
  if (edge > 0)
    s.code << "    addi r1, r1, " << full * kPackEdge * e << "\n    addi r2, r2, " << full * plane
           << "\n    dma.hv r2, r1, " << s.Desc(rows, edge * e, x.ld * e, kPackEdge * e) << ", f"
           << loaded_flag << "\n";
}

void PackChunk(StreamAsm& s, const DotOperand& x, int parity, int64_t rows, int64_t cols,
               int loaded_flag) {
  const int64_t e = x.elem, vreg = kPackSublanes * kPackEdge * e;
  const int64_t planes = CeilDiv(cols, kPackEdge);
  const uint64_t stage = Buffer(x.stage, x.stage_bytes(), parity);
  const uint64_t packed = Buffer(x.packed, x.packed_bytes(), parity);
  const std::string load = e == 2 ? "vld.bf16" : "vld";
  s.code << "    wait vpu, f" << loaded_flag << ", " << ChunkCopies(cols) << "\n";
  if (!x.transpose) {  // same layout, bf16: one hardware loop over the chunk's vregs
    s.code << "    li r24, " << stage << "\n    li r25, " << packed << "\n    li r26, "
           << planes * x.chunk_rows / kPackSublanes << "\n    vloop r26, 2\n    "
           << (e == 2 ? "vlds.bf16" : "vlds") << " v0, r24, " << vreg << "\n    vsts.bf16 v0, r25, "
           << kPackSublanes * kPackedRowBytes << "\n";
    return;
  }
  // A^T: tile (plane p, k block t) of [K rows][128 m] becomes rows m of packed k block t.
  // A tile is two hardware loops of one trip (16 loads and the transpose, 16 stores), their
  // 16 addresses in registers; the tile counters live in SMEM words 0 (p) and 4 (t).
  static constexpr int kBases[] = {1, 2, 3, 4, 5, 6, 20, 21, 22, 23, 24, 25, 26, 27, 29, 30};
  const std::string tile_loop = s.Label("xtile_");
  auto bases = [&](int64_t p_stride, int64_t t_stride, uint64_t base, int64_t vreg_stride) {
    s.code << "    sld r1, r0, 0\n    sld r2, r0, 4\n    muli r1, r1, " << p_stride
           << "\n    muli r2, r2, " << t_stride << "\n    add r1, r1, r2\n    addi r1, r1, " << base
           << "\n";
    for (int j = 1; j < 16; ++j)
      s.code << "    addi r" << kBases[j] << ", r1, " << j * vreg_stride << "\n";
  };
  s.code << "    sst r0, r0, 0\n    sst r0, r0, 4\n    li r31, 1\n" << tile_loop << ":\n";
  bases(x.chunk_rows * kPackEdge * e, kPackEdge * kPackEdge * e, stage, vreg);
  s.code << "    vloop r31, 17\n";
  for (int j = 0; j < 16; ++j) s.code << "    " << load << " v" << j << ", r" << kBases[j] << "\n";
  s.code << "    vxpose v16, v0\n";
  bases(kPackEdge * kPackedRowBytes, x.chunk_cols * kPackedRowBytes, packed,
        kPackSublanes * kPackedRowBytes);
  s.code << "    vloop r31, 16\n";
  for (int j = 0; j < 16; ++j) s.code << "    vst.bf16 v" << 16 + j << ", r" << kBases[j] << "\n";
  s.code << "    sld r1, r0, 4\n    addi r1, r1, 1\n    sst r1, r0, 4\n    li r2, "
         << CeilDiv(rows, kPackEdge) << "\n    blt r1, r2, " << tile_loop
         << "\n    sst r0, r0, 4\n    sld r1, r0, 0\n    addi r1, r1, 1\n    sst r1, r0, 0\n    li "
            "r2, "
         << planes << "\n    blt r1, r2, " << tile_loop << "\n";
}

}  // namespace tpusim::lowering
