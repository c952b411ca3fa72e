#include "compiler/lowering/reduce/pool_grad_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

constexpr int64_t kVregBytes = 4096;
constexpr int64_t kBudget = 14 << 20;  // VMEM for all buffers
constexpr int kMaxTaps = 9;            // pointers r5..r23: taps, source, contributions
constexpr int kImage = 24, kSource = 25, kOut = 26, kUnit = 27, kUnits = 28;

std::string F32(double v) {
  const float f = static_cast<float>(v);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  char text[32];
  std::snprintf(text, sizeof text, "f32:0x%08x", bits);
  return text;
}

struct Grad {
  int64_t n = 0, h = 0, w = 0, c = 0, ho = 0, wo = 0, ky = 1, kx = 1, sy = 1, sx = 1;
  double init = 0;
  uint64_t x = 0, source = 0, out = 0;
};

class Emitter {
 public:
  Emitter(const Grad& g, int64_t lines) : g_(g), lines_(lines) {
    taps_ = static_cast<int>(g.ky * g.kx), phases_ = static_cast<int>(g.sy * g.sx);
    hb_ = (g.ky - 1) / g.sy, gb_ = (g.kx - 1) / g.sx, wg_ = g.wo + gb_;
    cpi_ = (g.ho + lines - 1) / lines, unit_ = cpi_ % 2 ? 2 : 1;
    pixel_ = g.c * 4;
    const int64_t data = (lines + hb_) * wg_ * pixel_ + kVregBytes;  // a vreg of overrun
    gap_ = (gb_ * pixel_ + wg_ * pixel_ * hb_ + 2 * kVregBytes) / kVregBytes * kVregBytes;
    buf_ = (data + kVregBytes - 1) / kVregBytes * kVregBytes + gap_;
  }

  static int64_t Buffers(int taps, int phases) { return 2 * (taps + 1 + phases) + taps + 1; }
  int64_t Bytes() const { return Buffers(taps_, phases_) * buf_; }

  std::string Run() {
    std::ostringstream s;
    const int64_t steps = unit_ * cpi_;
    s << "# max pool gradient [" << g_.n << "," << g_.h << "," << g_.w << "," << g_.c << "]\n";
    for (int f = 0; f < 9; ++f)
      s << "    sflag f" << f << ", " << (f == 4 || f == 5 ? phases_ : 0) << "\n";
    // Constants: zeros over every source buffer (their guard columns stay zero) and the
    // constant area, -inf after it.
    s << "    vmovi v30, 0.0\n    vmovi v29, " << F32(-std::numeric_limits<double>::infinity())
      << "\n";
    for (int slot = 0; slot < 2; ++slot) s << Fill(Buffer(slot, taps_), buf_ - gap_, 30);
    s << Fill(Constants(), buf_ - gap_, 30) << Fill(Constants() + buf_ - gap_, kVregBytes, 29)
      << "    signal vpu, f8, 1\n    wait dma, f8, 1\n"
      << assembly::LoadAddress(kImage, g_.x, 3) << assembly::LoadAddress(kSource, g_.source, 3)
      << assembly::LoadAddress(kOut, g_.out, 3) << "    li r" << kUnit << ", 0\n    li r" << kUnits
      << ", " << g_.n / unit_ << "\n"
      << Fetch(0, 0) << "loop:\n";
    for (int64_t k = 0; k < steps; ++k) {
      if (k + 1 < steps) {
        s << Fetch(k + 1, static_cast<int>((k + 1) % 2));
      } else {
        s << "    addi r3, r" << kUnit << ", 1\n    bge r3, r" << kUnits << ", last\n"
          << Fetch(steps, 0) << "last:\n";
      }
      s << Compute(k, static_cast<int>(k % 2));
    }
    const int64_t in_image = g_.h * g_.w * pixel_, src_image = g_.ho * g_.wo * pixel_;
    s << "    addi r" << kImage << ", r" << kImage << ", " << unit_ * in_image << "\n    addi r"
      << kSource << ", r" << kSource << ", " << unit_ * src_image << "\n    addi r" << kOut << ", r"
      << kOut << ", " << unit_ * in_image << "\n    addi r" << kUnit << ", r" << kUnit
      << ", 1\n    blt r" << kUnit << ", r" << kUnits << ", loop\n"
      << "    sflag f15, 0\n    signal vpu, f15, 1\n    wait seq, f15, 1\n    wait seq, f4, "
      << phases_ << "\n    wait seq, f5, " << phases_ << "\n";
    return head_.str() + s.str();
  }

 private:
  // Buffers: per slot the taps, the source and the phases; then the contributions (shared)
  // and the constants. Each starts `gap_` after its slot so shifted loads stay inside VMEM.
  uint64_t At(int64_t index) const { return static_cast<uint64_t>(index * buf_ + gap_); }
  uint64_t Buffer(int slot, int i) const { return At(slot * (taps_ + 1 + phases_) + i); }
  uint64_t Phase(int slot, int p) const { return Buffer(slot, taps_ + 1 + p); }
  uint64_t Contribution(int t) const { return At(2 * (taps_ + 1 + phases_) + t); }
  uint64_t Constants() const { return At(2 * (taps_ + 1 + phases_) + taps_); }

  static std::string Fill(uint64_t at, int64_t bytes, int vreg) {
    return "    li r3, " + std::to_string(at) + "\n    li r4, " +
           std::to_string((bytes + kVregBytes - 1) / kVregBytes) + "\n    vloop r4, 1\n    vsts v" +
           std::to_string(vreg) + ", r3, 4096\n";
  }

  std::string Desc(const std::string& text) {
    auto [it, added] = descs_.emplace(text, "d" + std::to_string(descs_.size()));
    if (added) head_ << ".desc " << it->second << " " << text << "\n";
    return it->second;
  }

  // `op` from (src_reg or 0) + src to (dst_reg or 0) + dst; register -1: an absolute address.
  static std::string Dma(const std::string& op, int src_reg, int64_t src, int dst_reg, int64_t dst,
                         const std::string& desc, int flag) {
    auto address = [](int r, int reg, int64_t v) {
      return reg < 0 ? "    li r" + std::to_string(r) + ", " + std::to_string(v) + "\n"
                     : "    addi r" + std::to_string(r) + ", r" + std::to_string(reg) + ", " +
                           std::to_string(v) + "\n";
    };
    return address(3, src_reg, src) + address(4, dst_reg, dst) + "    " + op + " r4, r3, " + desc +
           ", f" + std::to_string(flag) + "\n";
  }

  static std::string Shape(int64_t planes, int64_t rows, int64_t row_bytes, int64_t ss, int64_t ds,
                           int64_t sps, int64_t dps) {
    return "rows=" + std::to_string(rows) + " row_bytes=" + std::to_string(row_bytes) +
           " src_stride=" + std::to_string(ss) + " dst_stride=" + std::to_string(ds) +
           " planes=" + std::to_string(planes) + " src_plane_stride=" + std::to_string(sps) +
           " dst_plane_stride=" + std::to_string(dps);
  }

  // Source positions o whose tap k lands inside [0, size): stride * o + k < size.
  static int64_t Inside(int64_t size, int64_t k, int64_t stride) {
    return k >= size ? 0 : (size - 1 - k) / stride + 1;
  }

  // Source lines [h0 - hb, h1) of step k's chunk into `slot`: the source (zeros before line
  // 0) and every tap (-inf past the input's edge).
  std::string Fetch(int64_t k, int slot) {
    std::ostringstream s;
    const int64_t image = k / cpi_, h0 = (k % cpi_) * lines_, h1 = std::min(g_.ho, h0 + lines_);
    const int64_t first = std::max<int64_t>(0, h0 - hb_), line = wg_ * pixel_;
    auto at = [&](int64_t ho, int64_t wo) {
      return (ho - (h0 - hb_)) * line + (wo + gb_) * pixel_;
    };
    int dmas = 0;
    const uint64_t src_buf = Buffer(slot, taps_);
    s << Dma("dma.hv", kSource, (image * g_.ho + first) * g_.wo * pixel_, -1,
             src_buf + at(first, 0),
             Desc(Shape(1, h1 - first, g_.wo * pixel_, g_.wo * pixel_, line, 0, 0)), slot);
    ++dmas;
    if (first > h0 - hb_) {
      s << Dma("dma.vv", -1, static_cast<int64_t>(Constants()), -1, src_buf + at(h0 - hb_, 0),
               Desc(Shape(1, first - (h0 - hb_), g_.wo * pixel_, 0, line, 0, 0)), slot);
      ++dmas;
    }
    const int64_t ninf = static_cast<int64_t>(Constants() + buf_ - gap_);
    for (int64_t dy = 0; dy < g_.ky; ++dy)
      for (int64_t dx = 0; dx < g_.kx; ++dx) {
        const uint64_t buf = Buffer(slot, static_cast<int>(dy * g_.kx + dx));
        // Lines [first, valid_end) and columns [0, cols) read the input.
        const int64_t valid_end = std::clamp<int64_t>(Inside(g_.h, dy, g_.sy), first, h1);
        const int64_t cols = std::clamp<int64_t>(Inside(g_.w, dx, g_.sx), 0, g_.wo);
        if (valid_end > first && cols > 0) {
          s << Dma("dma.hv", kImage,
                   image * g_.h * g_.w * pixel_ + ((g_.sy * first + dy) * g_.w + dx) * pixel_, -1,
                   buf + at(first, 0),
                   Desc(Shape(valid_end - first, cols, pixel_, g_.sx * pixel_, pixel_,
                              g_.sy * g_.w * pixel_, line)),
                   slot);
          ++dmas;
        }
        if (valid_end > first && cols < g_.wo) {
          s << Dma("dma.vv", -1, ninf, -1, buf + at(first, cols),
                   Desc(Shape(valid_end - first, g_.wo - cols, pixel_, 0, pixel_, 0, line)), slot);
          ++dmas;
        }
        if (h1 > valid_end) {
          s << Dma("dma.vv", -1, ninf, -1, buf + at(valid_end, 0),
                   Desc(Shape(h1 - valid_end, g_.wo, pixel_, 0, pixel_, 0, line)), slot);
          ++dmas;
        }
      }
    dmas_[k % (unit_ * cpi_)] = dmas;
    return s.str();
  }

  std::string Compute(int64_t k, int slot) {
    std::ostringstream s;
    const int64_t image = k / cpi_, h0 = (k % cpi_) * lines_, h1 = std::min(g_.ho, h0 + lines_);
    const int64_t line = wg_ * pixel_;
    s << "    wait vpu, f" << slot << ", " << dmas_[k] << "\n";
    // Contributions over every staged line (halo included).
    for (int t = 0; t <= taps_; ++t) s << "    li r" << 5 + t << ", " << Buffer(slot, t) << "\n";
    for (int t = 0; t < taps_; ++t)
      s << "    li r" << 6 + taps_ + t << ", " << Contribution(t) << "\n";
    const int T = taps_;
    s << "    li r4, " << ((h1 - h0 + hb_) * line + kVregBytes - 1) / kVregBytes
      << "\n    vloop r4, " << T + 1 + std::max(1, T - 1) + 1 + 5 * T << "\n";
    for (int t = 0; t <= T; ++t) s << "    vlds v" << t << ", r" << 5 + t << ", 4096\n";
    s << "    vmax v10, v0, v" << (T > 1 ? 1 : 0) << "\n";
    for (int t = 2; t < T; ++t) s << "    vmax v10, v10, v" << t << "\n";
    s << "    vmovi v11, 0.0\n";
    for (int t = 0; t < T; ++t)
      s << "    vcmp.eq v12, v" << t
        << ", v10\n    vsel v13, v11, v30, v12\n    vmax v11, v11, v12\n"
        << "    vsel v14, v13, v" << T << ", v30\n    vsts v14, r" << 6 + T + t << ", 4096\n";
    // Phases: (a, b) sums its taps' shifted contributions, latest window first.
    s << "    wait vpu, f" << 4 + slot << ", " << phases_ << "\n";
    for (int64_t a = 0; a < g_.sy; ++a)
      for (int64_t b = 0; b < g_.sx; ++b) {
        const int p = static_cast<int>(a * g_.sx + b);
        std::vector<int64_t> offsets;
        for (int64_t dy = g_.ky - 1; dy >= 0; --dy)
          for (int64_t dx = g_.kx - 1; dx >= 0; --dx)
            if (dy % g_.sy == a && dx % g_.sx == b)
              offsets.push_back(
                  static_cast<int64_t>(Contribution(static_cast<int>(dy * g_.kx + dx))) +
                  (hb_ - dy / g_.sy) * line - (dx / g_.sx) * pixel_);
        const int64_t lines_out = std::min(h1, (g_.h - a + g_.sy - 1) / g_.sy) - h0;
        const int64_t cols_out = (g_.w - b + g_.sx - 1) / g_.sx;
        if (lines_out <= 0 || cols_out <= 0) {
          s << "    signal vpu, f" << 4 + slot << ", 1\n";  // nothing to write: its credit back
          continue;
        }
        for (size_t i = 0; i < offsets.size(); ++i)
          s << "    li r" << 5 + i << ", " << offsets[i] << "\n";
        const uint64_t out = Phase(slot, p) + static_cast<uint64_t>(hb_ * line);
        s << "    li r4, " << out << "\n    li r3, "
          << (lines_out * line + kVregBytes - 1) / kVregBytes << "\n    vloop r3, "
          << 2 * offsets.size() + 2 << "\n    vmovi v21, " << F32(g_.init) << "\n";
        for (size_t i = 0; i < offsets.size(); ++i)
          s << "    vlds v" << i << ", r" << 5 + i << ", 4096\n    vadd v21, v21, v" << i << "\n";
        s << "    vsts v21, r4, 4096\n    signal vpu, f" << 2 + slot << ", 1\n    wait dma, f"
          << 2 + slot << ", 1\n"
          << Dma("dma.vh", -1, static_cast<int64_t>(out + gb_ * pixel_), kOut,
                 (image * g_.h * g_.w + (g_.sy * h0 + a) * g_.w + b) * pixel_,
                 Desc(Shape(lines_out, cols_out, pixel_, pixel_, g_.sx * pixel_, line,
                            g_.sy * g_.w * pixel_)),
                 4 + slot);
      }
    return s.str();
  }

  const Grad& g_;
  int64_t lines_, hb_ = 0, gb_ = 0, wg_ = 0, cpi_ = 1, unit_ = 1, pixel_ = 4, gap_ = 0, buf_ = 0;
  int taps_ = 1, phases_ = 1;
  std::map<std::string, std::string> descs_;
  std::map<int64_t, int> dmas_;
  std::ostringstream head_;
};

bool RootOf(const hlo::HloComputation* f, Opcode code, const char* direction) {
  if (!f || f->root()->opcode() != code || f->root()->operand_count() != 2) return false;
  const HloInstruction *a = f->root()->operand(0), *b = f->root()->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter ||
      a->parameter_number() != 0 || b->parameter_number() != 1)
    return false;
  return !direction || f->root()->GetWord("direction").value_or("") == direction;
}

}  // namespace

std::string MaxPoolGradKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (instr.opcode() != Opcode::kSelectAndScatter || instr.operand_count() != 3) return "";
  const hlo::Shape &x = instr.operand(0)->shape(), &src = instr.operand(1)->shape();
  const hlo::Window* win = instr.window();
  const HloInstruction* init = instr.operand(2);
  if (!win || win->dims.size() != 4 || x.dims.size() != 4 || src.dims.size() != 4 ||
      x.type != hlo::PrimitiveType::kF32 || src.type != hlo::PrimitiveType::kF32 ||
      instr.shape().type != hlo::PrimitiveType::kF32 ||
      !RootOf(instr.CalledComputation("select"), Opcode::kCompare, "GE") ||
      !RootOf(instr.CalledComputation("scatter"), Opcode::kAdd, nullptr) ||
      init->opcode() != Opcode::kConstant || init->literal().floats.empty())
    return "";
  for (const hlo::WindowDim& d : win->dims)
    if (d.lhs_dilate != 1 || d.rhs_dilate != 1 || d.pad_low != 0 || d.pad_high < 0) return "";
  for (int i : {0, 3})
    if (win->dims[i].size != 1 || win->dims[i].stride != 1 || win->dims[i].pad_high) return "";
  Grad g;
  g.n = x.dims[0], g.h = x.dims[1], g.w = x.dims[2], g.c = x.dims[3];
  g.ho = src.dims[1], g.wo = src.dims[2];
  g.ky = win->dims[1].size, g.kx = win->dims[2].size;
  g.sy = win->dims[1].stride, g.sx = win->dims[2].stride;
  g.init = init->literal().floats[0];
  const int taps = static_cast<int>(g.ky * g.kx);
  if (g.c % 64 || g.c > 1024 || taps > kMaxTaps || g.sy * g.sx > 4 || g.n <= 0 || g.ho <= 0 ||
      g.wo <= 0 || (g.h + g.sy - 1) / g.sy > g.ho || (g.w + g.sx - 1) / g.sx > g.wo)
    return "";
  if (4 * g.h * g.w * g.c * 4 > std::numeric_limits<int32_t>::max()) return "";
  int64_t lines = g.ho, cpi = 1;
  for (; lines > 0; --lines) {
    cpi = (g.ho + lines - 1) / lines;
    if (cpi % 2 && g.n % 2) continue;  // a unit of two images needs an even batch
    if (Emitter(g, lines).Bytes() <= kBudget) break;
  }
  if (lines <= 0) return "";
  g.x = c.address(instr.operand(0)), g.source = c.address(instr.operand(1));
  g.out = c.address(&instr);
  op.kind = KernelKind::kVpu;
  op.hbm_bytes =
      static_cast<uint64_t>(g.n * g.ho * g.wo * g.c * 4 * (taps + 1) + g.n * g.h * g.w * g.c * 4);
  op.exact = true;
  return ".tag \"" + instr.name() + "\"\n" + Emitter(g, lines).Run();
}

}  // namespace tpusim::lowering
