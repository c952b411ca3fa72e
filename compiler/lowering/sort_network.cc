#include "compiler/lowering/sort_network.h"

#include <sstream>
#include <utility>

namespace tpusim::lowering {
namespace {

constexpr int64_t kVregBytes = 4096;
constexpr int kFirstPointer = 5;                  // r5, r6: array 0's a and b pointers, ...
constexpr int kTrips = 3, kCounter = 4;           // scalar registers of the step loops
constexpr int kZero = 31;                         // v31 = 0.0
constexpr int kLess = 16, kTie = 17, kSwap = 19;  // compare-exchange temporaries

// One step: pairs (a0 + o * a_outer + t * a_inner, b0 + ...) for o < outer, t < inner, in
// vregs. The element at a precedes the one at b in the sorted order.
struct Step {
  int64_t a0 = 0, b0 = 0, outer = 1, a_outer = 0, b_outer = 0, inner = 1, a_inner = 0, b_inner = 0;
};

class Emitter {
 public:
  explicit Emitter(const SortNetworkPlan& p) : p_(p) {}

  std::string Run() {
    s_ << "    vmovi v" << kZero << ", 0.0\n";
    const int64_t n = p_.length;
    for (int64_t k = 2; k <= n; k *= 2) {
      // The mirror step: sorted halves of each block of k become a bitonic split.
      Emit(Step{0, k - 1, n / k, k, k, k / 2, 1, -1});
      for (int64_t j = k / 4; j >= 1; j /= 2) Emit(Step{0, j, n / (2 * j), 2 * j, 2 * j, j, 1, 1});
    }
    return s_.str();
  }

 private:
  int PointerA(size_t x) const { return kFirstPointer + 2 * static_cast<int>(x); }
  int PointerB(size_t x) const { return PointerA(x) + 1; }

  // The vloop runs the longer dimension; a scalar loop advances the pointers over the other.
  void Emit(Step s) {
    if (s.outer > s.inner)
      std::swap(s.outer, s.inner), std::swap(s.a_outer, s.a_inner), std::swap(s.b_outer, s.b_inner);
    const std::string label = p_.labels + "step" + std::to_string(steps_++);
    for (size_t x = 0; x < p_.arrays.size(); ++x)
      s_ << "    li r" << PointerA(x) << ", " << p_.arrays[x] + s.a0 * kVregBytes << "\n    li r"
         << PointerB(x) << ", " << p_.arrays[x] + s.b0 * kVregBytes << "\n";
    s_ << "    li r" << kCounter << ", 0\n"
       << label << ":\n    li r" << kTrips << ", " << s.inner << "\n";
    std::ostringstream body;
    const int lines = Body(body, s.a_inner * kVregBytes, s.b_inner * kVregBytes);
    s_ << "    vloop r" << kTrips << ", " << lines << "\n" << body.str();
    if (s.outer == 1) return;
    for (size_t x = 0; x < p_.arrays.size(); ++x)
      s_ << "    addi r" << PointerA(x) << ", r" << PointerA(x) << ", " << s.a_outer * kVregBytes
         << "\n    addi r" << PointerB(x) << ", r" << PointerB(x) << ", " << s.b_outer * kVregBytes
         << "\n";
    s_ << "    addi r" << kCounter << ", r" << kCounter << ", 1\n    li r" << kTrips << ", "
       << s.outer << "\n    blt r" << kCounter << ", r" << kTrips << ", " << label << "\n";
  }

  // Loads both elements of every array, swaps them where b sorts before a, stores them
  // back; returns the number of instructions.
  int Body(std::ostringstream& s, int64_t a_stride, int64_t b_stride) const {
    int lines = 0;
    auto line = [&](const std::string& text) { s << "    " << text << "\n", ++lines; };
    auto va = [](size_t x) { return "v" + std::to_string(2 * x); };
    auto vb = [](size_t x) { return "v" + std::to_string(2 * x + 1); };
    for (size_t x = 0; x < p_.arrays.size(); ++x) {
      line("vlds " + va(x) + ", r" + std::to_string(PointerA(x)) + ", " + std::to_string(a_stride));
      line("vlds " + vb(x) + ", r" + std::to_string(PointerB(x)) + ", " + std::to_string(b_stride));
    }
    // before = the key that must come first if they differ (b for LT: b < a swaps).
    const size_t k = p_.key, index = p_.arrays.size() - 1;
    const std::string first = p_.descending ? va(k) : vb(k), second = p_.descending ? vb(k) : va(k);
    const std::string less = "v" + std::to_string(kLess), tie = "v" + std::to_string(kTie),
                      zero = "v" + std::to_string(kZero);
    if (!p_.s32) {
      line("vcmp.lt " + less + ", " + first + ", " + second);
      line("vcmp.eq " + tie + ", " + first + ", " + second);
    } else {
      // Exact s32 order from f32 conversions: the rounded values order them unless they
      // round alike, and then they are close enough for their difference not to overflow.
      line("vsub.s32 v20, " + first + ", " + second);
      line("vcvt.f32.s32 v20, v20");
      line("vcvt.f32.s32 v21, " + first);
      line("vcvt.f32.s32 v22, " + second);
      line("vcmp.lt v23, v21, v22");
      line("vcmp.eq v24, v21, v22");
      line("vcmp.lt v25, v20, " + zero);
      line("vsel " + less + ", v24, v25, v23");
      line("vcmp.eq " + tie + ", v20, " + zero);
    }
    line("vcmp.lt v18, " + vb(index) + ", " + va(index));  // equal keys: the earlier first
    line("vsel v" + std::to_string(kSwap) + ", " + tie + ", v18, " + less);
    for (size_t x = 0; x < p_.arrays.size(); ++x) {
      line("vsel v26, v" + std::to_string(kSwap) + ", " + vb(x) + ", " + va(x));
      line("vsel v27, v" + std::to_string(kSwap) + ", " + va(x) + ", " + vb(x));
      line("vsts v26, r" + std::to_string(PointerA(x)) + ", " + std::to_string(a_stride));
      line("vsts v27, r" + std::to_string(PointerB(x)) + ", " + std::to_string(b_stride));
    }
    return lines;
  }

  const SortNetworkPlan& p_;
  std::ostringstream s_;
  int steps_ = 0;
};

}  // namespace

std::string SortNetwork(const SortNetworkPlan& plan) { return Emitter(plan).Run(); }

int64_t SortCompareExchanges(int64_t length) {
  int64_t log = 0;
  while ((int64_t{1} << log) < length) ++log;
  return length / 2 * log * (log + 1) / 2;
}

}  // namespace tpusim::lowering
