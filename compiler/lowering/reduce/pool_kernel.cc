#include "compiler/lowering/reduce/pool_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

constexpr int64_t kVregBytes = 4096;
constexpr int64_t kBufferBudget = 12 << 20;  // VMEM for both slots' tap and output buffers
constexpr int kMaxTaps = 16;                 // v0..v15; pointers r5..r20, output r21
constexpr int kImage = 26, kOutImage = 27, kUnit = 28, kUnits = 29;  // scalar registers

// The output positions [first, end) of one spatial dimension and the input index each tap
// offset k reads there: in + stride * o + k - pad_low, clamped into [0, size).
struct Segment {
  int64_t first = 0, end = 0, in = 0;  // `in`: the input index at `first`
  bool moves = true;                   // false: clamped, every position reads `in`
};

std::vector<Segment> Segments(int64_t first, int64_t end, int64_t k, const hlo::WindowDim& d,
                              int64_t size) {
  std::vector<Segment> out;
  for (int64_t o = first; o < end;) {
    const int64_t at = d.stride * o + k - d.pad_low;
    Segment s{o, o + 1, std::clamp<int64_t>(at, 0, size - 1), at >= 0 && at < size};
    while (s.end < end) {
      const int64_t next = d.stride * s.end + k - d.pad_low;
      if ((next >= 0 && next < size) != s.moves || (!s.moves && (next < 0) != (at < 0))) break;
      ++s.end;
    }
    out.push_back(s);
    o = s.end;
  }
  return out;
}

// The VPU form of a reduce-window's combiner and its identity (what a tap on padding adds).
struct Reducer {
  const char* mnemonic = "vmax";
  const char* identity = "-inf";
  bool clamps = true;  // padding may read the nearest edge pixel (max, min: idempotent)
};

struct Pool {
  int64_t n = 0, h = 0, w = 0, c = 0, ho = 0, wo = 0;
  hlo::WindowDim dy, dx;
  Reducer reducer;
  double init = 0;
  uint64_t input = 0, output = 0;
  std::string tag;
};

class Emitter {
 public:
  Emitter(const Pool& p, int64_t lines) : p_(p), lines_(lines) {
    taps_ = static_cast<int>(p.dy.size * p.dx.size);
    cpi_ = (p.ho + lines - 1) / lines;
    unit_ = cpi_ % 2 && p.n > 1 ? 2 : 1;  // one image alone has no next unit to fetch
    buf_ = (lines * p.wo * p.c * 4 + kVregBytes - 1) / kVregBytes * kVregBytes;
  }

  std::string Run() {
    std::ostringstream s;
    const int64_t steps = unit_ * cpi_;
    s << "# " << p_.reducer.mnemonic << " pool [" << p_.n << "," << p_.h << "," << p_.w << ","
      << p_.c << "] -> [" << p_.ho << "," << p_.wo << "]\n";
    for (int f = 0; f < 7; ++f) s << "    sflag f" << f << ", " << (f == 4 || f == 5) << "\n";
    char init[48];
    uint32_t bits = 0;
    const float f = static_cast<float>(p_.init);
    std::memcpy(&bits, &f, sizeof bits);
    std::snprintf(init, sizeof init, "f32:0x%08x", bits);
    s << "    vmovi v31, " << init << "\n"
      << assembly::LoadAddress(kImage, p_.input, 3)
      << assembly::LoadAddress(kOutImage, p_.output, 3) << "    li r" << kUnit << ", 0\n    li r"
      << kUnits << ", " << p_.n / unit_ << "\n"
      << IdentityFill() << Fetch(0, 0) << "loop:\n";
    for (int64_t k = 0; k < steps; ++k) {
      if (k + 1 < steps) {
        s << Fetch(k + 1, static_cast<int>((k + 1) % 2));
      } else {  // the next unit's first chunk, unless this is the last unit
        s << "    addi r3, r" << kUnit << ", 1\n    bge r3, r" << kUnits << ", last\n"
          << Fetch(steps, 0) << "last:\n";
      }
      s << Compute(k, static_cast<int>(k % 2));
    }
    s << "    addi r" << kImage << ", r" << kImage << ", " << unit_ * ImageBytes() << "\n    addi r"
      << kOutImage << ", r" << kOutImage << ", " << unit_ * p_.ho * p_.wo * p_.c * 4
      << "\n    addi r" << kUnit << ", r" << kUnit << ", 1\n    blt r" << kUnit << ", r" << kUnits
      << ", loop\n"
      << "    sflag f15, 0\n    signal vpu, f15, 1\n    wait seq, f15, 1\n    wait seq, f4, 1\n"
      << "    wait seq, f5, 1\n";
    return head_.str() + s.str();
  }

  int64_t ImageBytes() const { return p_.h * p_.w * p_.c * 4; }

 private:
  uint64_t Buffer(int slot, int t) const {
    return static_cast<uint64_t>((slot * (taps_ + 1) + t) * buf_);
  }

  // VMEM holding one pixel of the reducer's identity, above both slots' buffers.
  uint64_t IdentityPixel() const { return Buffer(2, 0); }

  // Taps on padding copy the identity pixel (dma.vv) when the reducer cannot clamp; the
  // VPU writes it before the first fetch and the DMA waits for it (f6).
  std::string IdentityFill() const {
    if (p_.reducer.clamps) return "";
    std::ostringstream s;
    const int64_t vregs = (p_.c * 4 + kVregBytes - 1) / kVregBytes;
    s << "    vmovi v30, " << p_.reducer.identity << "\n    li r4, " << IdentityPixel()
      << "\n    li r3, " << vregs << "\n    vloop r3, 1\n    vsts v30, r4, 4096\n"
      << "    signal vpu, f6, 1\n    wait dma, f6, 1\n";
    return s.str();
  }

  std::string Desc(const std::string& text) {
    auto [it, added] = descs_.emplace(text, "d" + std::to_string(descs_.size()));
    if (added) head_ << ".desc " << it->second << " " << text << "\n";
    return it->second;
  }

  // Step k's chunk (image k / cpi of the unit, lines of chunk k % cpi) into `slot`: one DMA
  // per tap and pair of row and column segments.
  std::string Fetch(int64_t k, int slot) {
    std::ostringstream s;
    const int64_t image = k / cpi_, h0 = (k % cpi_) * lines_, h1 = std::min(p_.ho, h0 + lines_);
    const int64_t pixel = p_.c * 4;
    int dmas = 0;
    for (int64_t ky = 0; ky < p_.dy.size; ++ky)
      for (int64_t kx = 0; kx < p_.dx.size; ++kx) {
        const int t = static_cast<int>(ky * p_.dx.size + kx);
        for (const Segment& r : Segments(h0, h1, ky, p_.dy, p_.h))
          for (const Segment& q : Segments(0, p_.wo, kx, p_.dx, p_.w)) {
            const bool pad = !p_.reducer.clamps && (!r.moves || !q.moves);
            const int64_t src = image * ImageBytes() + (r.in * p_.w + q.in) * pixel;
            const int64_t dst = ((r.first - h0) * p_.wo + q.first) * pixel;
            const std::string d = Desc(
                "rows=" + std::to_string(q.end - q.first) + " row_bytes=" + std::to_string(pixel) +
                " src_stride=" + std::to_string(q.moves && !pad ? p_.dx.stride * pixel : 0) +
                " dst_stride=" + std::to_string(pixel) +
                " planes=" + std::to_string(r.end - r.first) + " src_plane_stride=" +
                std::to_string(r.moves && !pad ? p_.dy.stride * p_.w * pixel : 0) +
                " dst_plane_stride=" + std::to_string(p_.wo * pixel));
            if (pad)
              s << "    li r3, " << IdentityPixel() << "\n    li r4, " << Buffer(slot, t) + dst
                << "\n    dma.vv r4, r3, " << d << ", f" << slot << "\n";
            else
              s << "    addi r3, r" << kImage << ", " << src << "\n    li r4, "
                << Buffer(slot, t) + dst << "\n    dma.hv r4, r3, " << d << ", f" << slot << "\n";
            ++dmas;
          }
      }
    dmas_[k % (unit_ * cpi_)] = dmas;
    return s.str();
  }

  // The reduction of the init value and the taps in window order over the chunk's vregs, then out
  // to HBM.
  std::string Compute(int64_t k, int slot) {
    std::ostringstream s;
    const int64_t image = k / cpi_, h0 = (k % cpi_) * lines_, h1 = std::min(p_.ho, h0 + lines_);
    const int64_t bytes = (h1 - h0) * p_.wo * p_.c * 4;
    s << "    wait vpu, f" << slot << ", " << dmas_[k] << "\n    wait vpu, f" << 4 + slot
      << ", 1\n";
    for (int t = 0; t <= taps_; ++t) s << "    li r" << 5 + t << ", " << Buffer(slot, t) << "\n";
    s << "    li r4, " << (bytes + kVregBytes - 1) / kVregBytes << "\n    vloop r4, "
      << 2 * taps_ + 1 << "\n";
    for (int t = 0; t < taps_; ++t) s << "    vlds v" << t << ", r" << 5 + t << ", 4096\n";
    const std::string op = std::string("    ") + p_.reducer.mnemonic + " v20, ";
    s << op << "v31, v0\n";
    for (int t = 1; t < taps_; ++t) s << op << "v20, v" << t << "\n";
    s << "    vsts v20, r" << 5 + taps_ << ", 4096\n    signal vpu, f" << 2 + slot
      << ", 1\n    wait dma, f" << 2 + slot << ", 1\n    addi r3, r" << kOutImage << ", "
      << (image * p_.ho + h0) * p_.wo * p_.c * 4 << "\n    li r4, " << Buffer(slot, taps_)
      << "\n    dma.vh r3, r4, "
      << Desc("rows=1 row_bytes=" + std::to_string(bytes) + " src_stride=0 dst_stride=0") << ", f"
      << 4 + slot << "\n";
    return s.str();
  }

  const Pool& p_;
  int64_t lines_, cpi_ = 1, unit_ = 1, buf_ = 0;
  int taps_ = 1;
  std::map<std::string, std::string> descs_;
  std::map<int64_t, int> dmas_;
  std::ostringstream head_;
};

// The reducer of a combiner that is add, max or min of its two parameters.
std::optional<Reducer> ReducerOf(const hlo::HloComputation* f) {
  if (!f || f->root()->operand_count() != 2 ||
      f->root()->operand(0)->opcode() != Opcode::kParameter ||
      f->root()->operand(1)->opcode() != Opcode::kParameter)
    return std::nullopt;
  switch (f->root()->opcode()) {
    case Opcode::kAdd:
      return Reducer{"vadd", "0.0", false};
    case Opcode::kMaximum:
      return Reducer{"vmax", "-inf", true};
    case Opcode::kMinimum:
      return Reducer{"vmin", "inf", true};
    default:
      return std::nullopt;
  }
}

// The reduce-window as the kernel's [n, h, w, c] pooling: the windowed dimensions (at most
// two, adjacent) become h and w, those before them n and those after c, multiplied out
// (row-major values keep their order). Empty when the window does not allow that.
struct View {
  std::vector<int64_t> x, y;  // [n, h, w, c] of the input and the output
  hlo::WindowDim dy, dx;
};

std::optional<View> FourDimensional(const hlo::Shape& x, const hlo::Shape& y,
                                    const hlo::Window& win) {
  const size_t rank = x.dims.size();
  if (rank == 0 || win.dims.size() != rank || y.dims.size() != rank) return std::nullopt;
  std::vector<size_t> windowed;
  for (size_t k = 0; k < rank; ++k) {
    const hlo::WindowDim& d = win.dims[k];
    if (d.size != 1 || d.stride != 1 || d.pad_low || d.pad_high) windowed.push_back(k);
  }
  if (windowed.size() > 2 || (windowed.size() == 2 && windowed[1] != windowed[0] + 1))
    return std::nullopt;
  // h and w: the windowed dimensions (w the last), else the last dimensions before c
  size_t w = windowed.empty() ? rank - 1 : windowed.back();
  size_t h = windowed.size() == 2 ? windowed[0] : w;  // h == w: h is a unit dimension
  auto product = [](const std::vector<int64_t>& d, size_t lo, size_t hi) {
    int64_t p = 1;
    for (size_t k = lo; k < hi; ++k) p *= d[k];
    return p;
  };
  View v;
  for (const auto* s : {&x, &y}) {
    std::vector<int64_t>& out = s == &x ? v.x : v.y;
    out = {product(s->dims, 0, h), h == w ? 1 : s->dims[h], s->dims[w],
           product(s->dims, w + 1, rank)};
  }
  v.dy = h == w ? hlo::WindowDim{} : win.dims[h];
  v.dx = win.dims[w];
  return v;
}

}  // namespace

std::string ReduceWindowKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (instr.opcode() != Opcode::kReduceWindow || instr.operand_count() != 2) return "";
  const hlo::Shape &x = instr.operand(0)->shape(), &y = instr.shape();
  const hlo::Window* win = instr.window();
  const HloInstruction* init = instr.operand(1);
  const std::optional<Reducer> reducer = ReducerOf(instr.to_apply());
  if (!win || !x.IsArray() || !y.IsArray() || x.type != hlo::PrimitiveType::kF32 ||
      y.type != hlo::PrimitiveType::kF32 || !reducer || init->opcode() != Opcode::kConstant ||
      init->literal().floats.empty())
    return "";
  for (const hlo::WindowDim& d : win->dims)
    if (d.lhs_dilate != 1 || d.rhs_dilate != 1 || d.pad_low < 0 || d.pad_high < 0) return "";
  // (HBM holds arrays in their logical row-major order; layouts size the buffers.)
  const std::optional<View> v = FourDimensional(x, y, *win);
  if (!v) return "";
  Pool p;
  p.n = v->x[0], p.h = v->x[1], p.w = v->x[2], p.c = v->x[3];
  p.ho = v->y[1], p.wo = v->y[2], p.dy = v->dy, p.dx = v->dx;
  if (v->y[0] != p.n || v->y[3] != p.c) return "";
  p.init = init->literal().floats[0], p.reducer = *reducer;
  // With clamped taps standing for padding, every window must hold an input element.
  for (auto [d, size, out] : {std::tuple{p.dy, p.h, p.ho}, std::tuple{p.dx, p.w, p.wo}})
    if (p.reducer.clamps && (d.pad_low >= d.size || d.stride * (out - 1) - d.pad_low > size - 1))
      return "";
  const int taps = static_cast<int>(p.dy.size * p.dx.size);
  const int64_t line = p.wo * p.c * 4;
  if (taps > kMaxTaps || p.n <= 0 || p.ho <= 0 || p.wo <= 0) return "";
  if (p.c * 4 > kVregBytes * 256) return "";  // the identity pixel sits above the budget
  int64_t lines = std::min(p.ho, kBufferBudget / (2 * (taps + 1)) / line);
  if (lines <= 0) return "";
  int64_t cpi = (p.ho + lines - 1) / lines;
  if (cpi % 2 && cpi < p.ho) lines = (p.ho + cpi) / (cpi + 1), cpi = (p.ho + lines - 1) / lines;
  if (cpi % 2 && p.n % 2 && p.n > 1) return "";  // a unit is two images
  if (3 * p.h * p.w * p.c * 4 > std::numeric_limits<int32_t>::max()) return "";  // immediates
  p.input = c.address(instr.operand(0)), p.output = c.address(&instr), p.tag = instr.name();
  Emitter e(p, lines);
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = static_cast<uint64_t>(p.n * p.ho * p.wo * p.c * 4 * (taps + 1));
  op.exact = true;
  return ".tag \"" + p.tag + "\"\n" + e.Run();
}

}  // namespace tpusim::lowering
