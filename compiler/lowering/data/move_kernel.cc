#include "compiler/lowering/data/move_kernel.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

constexpr int64_t kMaxDescField = std::numeric_limits<uint32_t>::max();  // rows, planes, bytes
constexpr int64_t kFirstFillElems = 1024;  // a fill from HBM doubles a seed of this many words
constexpr int64_t kVregBytes = 4096;       // one f32[8,128] vreg
constexpr int64_t kFillBlockVregs = 16;    // an immediate fill's VMEM block: 64 KiB

struct Dim {
  int64_t n, src, dst;
};

bool Aligned(int64_t v) { return v % 4 == 0; }

// rd += stride (r10, r11 scratch when the stride needs more than 32 bits).
std::string AddStride(int rd, int64_t stride) {
  if (stride == 0) return "";
  std::ostringstream s;
  if (stride >= std::numeric_limits<int32_t>::min() &&
      stride <= std::numeric_limits<int32_t>::max())
    s << "    addi r" << rd << ", r" << rd << ", " << stride << "\n";
  else
    s << assembly::LoadAddress(10, static_cast<uint64_t>(stride), 11) << "    add r" << rd << ", r"
      << rd << ", r10\n";
  return s.str();
}

// One move's copies: a descriptor and zero, one or two register loops around dma.hh.
void EmitMove(const MovePlan& p, const StridedMove& m, const std::string& d, std::ostream& s) {
  s << ".desc " << d << " rows=" << p.rows << " row_bytes=" << p.row_bytes
    << " src_stride=" << p.src_row << " dst_stride=" << p.dst_row << " planes=" << p.planes
    << " src_plane_stride=" << p.src_plane << " dst_plane_stride=" << p.dst_plane << "\n"
    << assembly::LoadAddress(1, m.src, 9) << assembly::LoadAddress(2, m.dst, 9);
  if (m.src_reg) s << "    add r1, r1, r" << m.src_reg << "\n";
  if (m.dst_reg) s << "    add r2, r2, r" << m.dst_reg << "\n";
  const std::string copy = "dma.hh r8, r7, " + d + ", f0\n";
  if (p.outer.empty()) {
    s << "    dma.hh r2, r1, " << d << ", f0\n";
    return;
  }
  const bool two = p.outer.size() == 2;
  s << "    li r3, 0\n    li r4, " << p.outer[0] << "\n"
    << d << "_o:\n    mov r7, r1\n    mov r8, r2\n";
  if (two)
    s << "    li r5, 0\n    li r6, " << p.outer[1] << "\n"
      << d << "_i:\n    " << copy << AddStride(7, p.outer_src[1]) << AddStride(8, p.outer_dst[1])
      << "    addi r5, r5, 1\n    blt r5, r6, " << d << "_i\n";
  else
    s << "    " << copy;
  s << AddStride(1, p.outer_src[0]) << AddStride(2, p.outer_dst[0])
    << "    addi r3, r3, 1\n    blt r3, r4, " << d << "_o\n";
}

}  // namespace

int64_t MovePlan::copies() const {
  int64_t n = 1;
  for (int64_t o : outer) n *= o;
  return n;
}

MovePlan PlanMove(const StridedMove& m) {
  if (m.dims.size() != m.src_strides.size() || m.dims.size() != m.dst_strides.size())
    throw std::invalid_argument("strided move: dims and strides differ in rank");
  std::vector<Dim> dims;  // outermost first, size-1 dimensions dropped, contiguous ones merged
  for (size_t i = 0; i < m.dims.size(); ++i) {
    if (m.dims[i] <= 0) throw std::invalid_argument("strided move: empty block");
    if (m.dims[i] == 1) continue;
    Dim d{m.dims[i], m.src_strides[i], m.dst_strides[i]};
    if (!dims.empty() && dims.back().src == d.src * d.n && dims.back().dst == d.dst * d.n)
      dims.back() = Dim{dims.back().n * d.n, d.src, d.dst};
    else
      dims.push_back(d);
  }
  MovePlan p;
  p.row_bytes = m.elem_bytes;
  if (!dims.empty() && dims.back().src == m.elem_bytes && dims.back().dst == m.elem_bytes) {
    p.row_bytes = dims.back().n * m.elem_bytes;
    dims.pop_back();
  }
  // The descriptor takes the two largest dimensions (the more inner one as its rows), the
  // register loops the rest: a transpose of short runs (space-to-depth's 12-byte pixels
  // pairs) is then a few long copies, not one per outer index.
  if (dims.size() > 2) {
    std::vector<size_t> by_size(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) by_size[i] = i;
    std::stable_sort(by_size.begin(), by_size.end(),
                     [&](size_t a, size_t b) { return dims[a].n > dims[b].n; });
    const size_t lo = std::min(by_size[0], by_size[1]), hi = std::max(by_size[0], by_size[1]);
    std::vector<Dim> order;
    for (size_t i = 0; i < dims.size(); ++i)
      if (i != lo && i != hi) order.push_back(dims[i]);
    order.push_back(dims[lo]), order.push_back(dims[hi]);
    dims = std::move(order);
  }
  if (!dims.empty()) {
    p.rows = dims.back().n, p.src_row = dims.back().src, p.dst_row = dims.back().dst;
    dims.pop_back();
  }
  if (!dims.empty()) {
    p.planes = dims.back().n, p.src_plane = dims.back().src, p.dst_plane = dims.back().dst;
    dims.pop_back();
  }
  if (dims.size() > 2) throw std::invalid_argument("strided move: more than two outer loops");
  for (const Dim& d : dims) {
    p.outer.push_back(d.n), p.outer_src.push_back(d.src), p.outer_dst.push_back(d.dst);
    if (!Aligned(d.src) || !Aligned(d.dst))
      throw std::invalid_argument("strided move: outer stride not 4-byte aligned");
  }
  if (!Aligned(p.row_bytes) || !Aligned(p.src_row) || !Aligned(p.dst_row) ||
      !Aligned(p.src_plane) || !Aligned(p.dst_plane) || m.src % 4 || m.dst % 4)
    throw std::invalid_argument("strided move: copies are not 4-byte aligned");
  if (p.rows > kMaxDescField || p.planes > kMaxDescField || p.row_bytes > kMaxDescField)
    throw std::invalid_argument("strided move: block exceeds a descriptor");
  return p;
}

int64_t MoveKernelVmemBytes() { return kFillBlockVregs * kVregBytes; }

std::string MoveKernel(const std::vector<StridedMove>& moves, const MoveFill* fill,
                       const std::string& tag) {
  std::vector<MovePlan> plans;
  for (const StridedMove& m : moves) plans.push_back(PlanMove(m));
  std::ostringstream s;
  s << "# strided HBM -> HBM moves (compiler/lowering/data/move_kernel.cc)\n.tag \"" << tag
    << "\"\n    sflag f0, 0\n    sflag f1, 0\n";
  if (fill && fill->bytes > 0) {
    if (fill->bytes % 4 || fill->dst % 4 || fill->value % 4)
      throw std::invalid_argument("strided move: fill is not 4-byte aligned");
    if (fill->immediate || fill->bits) {
      // The value fills a block of VMEM once (kFillBlockVregs vst), then DMA writes the block
      // over and over (source stride 0): HBM sees only the writes.
      char v[64];
      if (fill->immediate)
        std::snprintf(v, sizeof v, "%.9g", *fill->immediate);
      else
        std::snprintf(v, sizeof v, "f32:0x%08x", static_cast<unsigned>(*fill->bits));
      const int64_t block = std::min(fill->bytes, kFillBlockVregs * kVregBytes);
      s << "    vmovi v0, " << v << "\n";
      for (int64_t at = 0; at < block; at += kVregBytes)
        s << "    li r1, " << at << "\n    vst v0, r1\n";
      s << "    signal vpu, f1, 1\n    wait seq, f1, 1\n    li r1, 0\n";
      const int64_t whole = fill->bytes / block, tail = fill->bytes - whole * block;
      s << ".desc fill_blocks rows=" << whole << " row_bytes=" << block
        << " src_stride=0 dst_stride=" << block << "\n"
        << assembly::LoadAddress(2, fill->dst, 9) << "    dma.vh r2, r1, fill_blocks, f1\n";
      if (tail > 0)
        s << ".desc fill_tail rows=1 row_bytes=" << tail << "\n"
          << assembly::LoadAddress(2, fill->dst + static_cast<uint64_t>(whole * block), 9)
          << "    dma.vh r2, r1, fill_tail, f1\n";
      s << "    wait seq, f1, " << (tail > 0 ? 2 : 1) << "\n";
    } else {
      const int64_t first = std::min(fill->bytes / 4, kFirstFillElems);
      s << ".desc fill_first rows=" << first << " row_bytes=4 src_stride=0 dst_stride=4\n"
        << assembly::LoadAddress(1, fill->value, 9) << assembly::LoadAddress(2, fill->dst, 9)
        << "    dma.hh r2, r1, fill_first, f1\n    wait seq, f1, 1\n";
      int64_t done = first * 4, step = 1;
      while (done < fill->bytes) {  // double the filled prefix
        const int64_t n = std::min({done, fill->bytes - done, kMaxDescField / 4 * 4});
        s << ".desc fill" << step << " rows=1 row_bytes=" << n << "\n"
          << assembly::LoadAddress(1, fill->dst, 9) << assembly::LoadAddress(2, fill->dst + done, 9)
          << "    dma.hh r2, r1, fill" << step
          << ", f1\n    wait seq, f1, 1\n";  // wait consumes what it waits for
        done += n, ++step;
      }
    }
  }
  int64_t copies = 0;
  for (size_t i = 0; i < moves.size(); ++i) {
    EmitMove(plans[i], moves[i], "m" + std::to_string(i), s);
    copies += plans[i].copies();
  }
  if (copies > 0) s << "    wait seq, f0, " << copies << "\n";
  return s.str();
}

}  // namespace tpusim::lowering
