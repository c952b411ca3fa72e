#include "compiler/lowering/sort/sort_network.h"

#include <cstdio>
#include <sstream>
#include <utility>

namespace tpusim::lowering {
namespace {

constexpr int64_t kVregBytes = 4096;
constexpr int kFirstPointer = 5;                  // r5, r6: array 0's a and b pointers, ...
constexpr int kTrips = 3, kCounter = 4;           // scalar registers of the step loops
constexpr int kPerm = 28, kLow = 29;              // a lane step's partner lanes and lower-lane mask
constexpr int kZero = 31;                         // v31 = 0.0
constexpr int kLess = 16, kTie = 17, kSwap = 19;  // compare-exchange temporaries

// One step between whole vregs: pairs (a0 + o * a_outer + t * a_inner, b0 + ...) for
// o < outer, t < inner. The element at a precedes the one at b in the sorted order;
// `reversed`: b's lanes run backwards (a merge's mirror step in the lanes layout).
struct Step {
  int64_t a0 = 0, b0 = 0, outer = 1, a_outer = 0, b_outer = 0, inner = 1, a_inner = 0, b_inner = 0;
  bool reversed = false;
};

int Log2(int64_t x) {
  int b = 0;
  while ((int64_t{1} << b) < x) ++b;
  return b;
}

std::string V(int r) { return "v" + std::to_string(r); }

class Emitter {
 public:
  explicit Emitter(const SortNetworkPlan& p) : p_(p) {}

  std::string Run() {
    s_ << "    vmovi " << V(kZero) << ", 0.0\n";
    const int64_t n = p_.length, lanes = p_.lanes, vregs = n / lanes;
    for (int64_t k = 2; k <= n; k *= 2) {
      // The mirror step: sorted halves of each block of k become a bitonic split.
      if (k <= lanes) {
        LaneStep(7 + Log2(k) - 1, Log2(k / 2));
      } else {
        const int64_t kv = k / lanes;
        Emit(Step{0, kv - 1, vregs / kv, kv, kv, kv / 2, 1, -1, lanes > 1});
      }
      for (int64_t j = k / 4; j >= 1; j /= 2) {
        if (j < lanes) {
          LaneStep(Log2(j), Log2(j));
        } else {
          const int64_t jv = j / lanes;
          Emit(Step{0, jv, vregs / (2 * jv), 2 * jv, 2 * jv, jv, 1, 1});
        }
      }
    }
    return s_.str();
  }

  int64_t instructions() const { return instructions_; }

 private:
  int PointerA(size_t x) const { return kFirstPointer + 2 * static_cast<int>(x); }
  int PointerB(size_t x) const { return PointerA(x) + 1; }

  void LoadTable(int reg, int table) {
    s_ << "    li r1, " << p_.lane_tables + table * kVregBytes << "\n    vld " << V(reg)
       << ", r1\n";
    instructions_ += 1;
  }

  // The vloop runs the longer dimension; a scalar loop advances the pointers over the other.
  void Emit(Step s) {
    if (s.outer > s.inner)
      std::swap(s.outer, s.inner), std::swap(s.a_outer, s.a_inner), std::swap(s.b_outer, s.b_inner);
    if (s.reversed) LoadTable(kPerm, 13);  // l ^ 127
    const std::string label = p_.labels + "step" + std::to_string(steps_++);
    for (size_t x = 0; x < p_.arrays.size(); ++x)
      s_ << "    li r" << PointerA(x) << ", " << p_.arrays[x] + s.a0 * kVregBytes << "\n    li r"
         << PointerB(x) << ", " << p_.arrays[x] + s.b0 * kVregBytes << "\n";
    std::ostringstream body;
    const int lines = PairBody(body, s.a_inner * kVregBytes, s.b_inner * kVregBytes, s.reversed);
    instructions_ += static_cast<int64_t>(lines) * s.inner * s.outer;
    Loop(label, s.outer, s.inner, lines, body.str(), [&] {
      for (size_t x = 0; x < p_.arrays.size(); ++x)
        s_ << "    addi r" << PointerA(x) << ", r" << PointerA(x) << ", " << s.a_outer * kVregBytes
           << "\n    addi r" << PointerB(x) << ", r" << PointerB(x) << ", "
           << s.b_outer * kVregBytes << "\n";
    });
  }

  // A step within each vreg: lane l meets lane perm[l] (table `perm`); `low` (bit) marks the
  // lanes whose partner comes later in the line.
  void LaneStep(int perm, int low_bit) {
    LoadTable(kPerm, perm);
    LoadTable(kLow, 14 + low_bit);
    const std::string label = p_.labels + "step" + std::to_string(steps_++);
    for (size_t x = 0; x < p_.arrays.size(); ++x)
      s_ << "    li r" << PointerA(x) << ", " << p_.arrays[x] << "\n";
    std::ostringstream body;
    const int lines = LaneBody(body);
    const int64_t vregs = p_.length / p_.lanes;
    instructions_ += static_cast<int64_t>(lines) * vregs;
    Loop(label, 1, vregs, lines, body.str(), [] {});
  }

  template <typename Advance>
  void Loop(const std::string& label, int64_t outer, int64_t inner, int lines,
            const std::string& body, Advance advance) {
    s_ << "    li r" << kCounter << ", 0\n"
       << label << ":\n    li r" << kTrips << ", " << inner << "\n    vloop r" << kTrips << ", "
       << lines << "\n"
       << body;
    if (outer == 1) return;
    advance();
    s_ << "    addi r" << kCounter << ", r" << kCounter << ", 1\n    li r" << kTrips << ", "
       << outer << "\n    blt r" << kCounter << ", r" << kTrips << ", " << label << "\n";
  }

  // kSwap = 1.0 where the element in `second` must come before the one in `first` (first
  // precedes second in the line); index registers break ties.
  void Compare(std::ostringstream& s, int& lines, const std::string& first_key,
               const std::string& second_key, const std::string& first_index,
               const std::string& second_index) const {
    auto line = [&](const std::string& text) { s << "    " << text << "\n", ++lines; };
    // lhs < rhs in the comparator's order means: second before first.
    const std::string lhs = p_.descending ? first_key : second_key,
                      rhs = p_.descending ? second_key : first_key;
    if (!p_.s32) {
      line("vcmp.lt " + V(kLess) + ", " + lhs + ", " + rhs);
      line("vcmp.eq " + V(kTie) + ", " + lhs + ", " + rhs);
    } else {
      // Exact s32 order from f32 conversions: the rounded values order them unless they
      // round alike, and then they are close enough for their difference not to overflow.
      line("vsub.s32 v20, " + lhs + ", " + rhs);
      line("vcvt.f32.s32 v20, v20");
      line("vcvt.f32.s32 v21, " + lhs);
      line("vcvt.f32.s32 v22, " + rhs);
      line("vcmp.lt v23, v21, v22");
      line("vcmp.eq v24, v21, v22");
      line("vcmp.lt v25, v20, " + V(kZero));
      line("vsel " + V(kLess) + ", v24, v25, v23");
      line("vcmp.eq " + V(kTie) + ", v20, " + V(kZero));
    }
    line("vcmp.lt v18, " + second_index + ", " + first_index);  // equal keys: the earlier
    line("vsel " + V(kSwap) + ", " + V(kTie) + ", v18, " + V(kLess));
  }

  // Loads both vregs of every array, swaps elements where b's must come first, stores them
  // back; returns the number of instructions.
  int PairBody(std::ostringstream& s, int64_t a_stride, int64_t b_stride, bool reversed) const {
    int lines = 0;
    auto line = [&](const std::string& text) { s << "    " << text << "\n", ++lines; };
    auto va = [](size_t x) { return V(2 * static_cast<int>(x)); };
    auto vb = [](size_t x) { return V(2 * static_cast<int>(x) + 1); };
    for (size_t x = 0; x < p_.arrays.size(); ++x) {
      line("vlds " + va(x) + ", r" + std::to_string(PointerA(x)) + ", " + std::to_string(a_stride));
      line("vlds " + vb(x) + ", r" + std::to_string(PointerB(x)) + ", " + std::to_string(b_stride));
      if (reversed) line("vperm " + vb(x) + ", " + vb(x) + ", " + V(kPerm));
    }
    const size_t index = p_.arrays.size() - 1;
    Compare(s, lines, va(p_.key), vb(p_.key), va(index), vb(index));
    for (size_t x = 0; x < p_.arrays.size(); ++x) {
      line("vsel v26, " + V(kSwap) + ", " + vb(x) + ", " + va(x));
      line("vsel v27, " + V(kSwap) + ", " + va(x) + ", " + vb(x));
      if (reversed) line("vperm v27, v27, " + V(kPerm));
      line("vsts v26, r" + std::to_string(PointerA(x)) + ", " + std::to_string(a_stride));
      line("vsts v27, r" + std::to_string(PointerB(x)) + ", " + std::to_string(b_stride));
    }
    return lines;
  }

  // Every lane takes its partner's element where the pair must swap.
  int LaneBody(std::ostringstream& s) const {
    int lines = 0;
    auto line = [&](const std::string& text) { s << "    " << text << "\n", ++lines; };
    auto own = [](size_t x) { return V(2 * static_cast<int>(x)); };
    auto partner = [](size_t x) { return V(2 * static_cast<int>(x) + 1); };
    for (size_t x = 0; x < p_.arrays.size(); ++x) {
      line("vlds " + own(x) + ", r" + std::to_string(PointerA(x)) + ", 4096");
      line("vperm " + partner(x) + ", " + own(x) + ", " + V(kPerm));
    }
    // The pair's first and second elements (in line order), seen from either lane.
    const size_t key = p_.key, index = p_.arrays.size() - 1;
    line("vsel v10, " + V(kLow) + ", " + own(key) + ", " + partner(key));
    line("vsel v11, " + V(kLow) + ", " + partner(key) + ", " + own(key));
    line("vsel v12, " + V(kLow) + ", " + own(index) + ", " + partner(index));
    line("vsel v13, " + V(kLow) + ", " + partner(index) + ", " + own(index));
    Compare(s, lines, "v10", "v11", "v12", "v13");
    for (size_t x = 0; x < p_.arrays.size(); ++x) {
      line("vsel v26, " + V(kSwap) + ", " + partner(x) + ", " + own(x));
      line("vsts v26, r" + std::to_string(PointerA(x)) + ", 4096");
    }
    return lines;
  }

  const SortNetworkPlan& p_;
  std::ostringstream s_;
  int steps_ = 0;
  int64_t instructions_ = 0;
};

}  // namespace

std::string SortLaneTables(uint64_t base, uint64_t scratch, int flag) {
  std::ostringstream s;
  const std::string f = "f" + std::to_string(flag);
  // Vregs of k (s32 bits) for k < 128, then element 0 of vreg l into lane l of every sublane.
  s << "    vmovi v0, f32:0x00000000\n    vmovi v1, f32:0x00000001\n    li r1, " << scratch
    << "\n    li r3, 128\n    vloop r3, 2\n    vsts v0, r1, 4096\n    vadd.s32 v0, v0, v1\n"
    << "    signal vpu, " << f << ", 1\n    wait dma, " << f << ", 1\n"
    << ".desc lane_iota rows=128 row_bytes=4 src_stride=4096 dst_stride=4 planes=8 "
       "src_plane_stride=0 dst_plane_stride=512\n    li r2, "
    << scratch + 128 * kVregBytes << "\n    dma.vv r2, r1, lane_iota, " << f << "\n    wait vpu, "
    << f << ", 1\n    vld v0, r2\n    vcvt.f32.s32 v3, v0\n    li r1, " << base + 21 * kVregBytes
    << "\n    vst v3, r1\n";
  for (int b = 0; b < 7; ++b)
    for (int table : {b, 7 + b}) {
      const uint32_t mask = table < 7 ? 1u << b : (2u << b) - 1;
      char m[16];
      std::snprintf(m, sizeof m, "0x%08x", mask);
      s << "    vmovi v1, f32:" << m << "\n    vxor.u32 v1, v0, v1\n    vcvt.f32.s32 v1, v1\n"
        << "    li r1, " << base + table * kVregBytes << "\n    vst v1, r1\n";
      if (table < 7)  // bit 2^b of l is clear exactly when its partner l ^ 2^b is larger
        s << "    vcmp.lt v2, v3, v1\n    li r1, " << base + (14 + b) * kVregBytes
          << "\n    vst v2, r1\n";
    }
  return s.str();
}

std::string SortNetwork(const SortNetworkPlan& plan) { return Emitter(plan).Run(); }

int64_t SortNetworkInstructions(const SortNetworkPlan& plan) {
  Emitter e(plan);
  e.Run();
  return e.instructions();
}

}  // namespace tpusim::lowering
