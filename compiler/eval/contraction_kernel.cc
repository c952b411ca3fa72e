// AccumulateRows: a register-blocked loop over (4 rows) x (one panel of 2 vectors), K
// innermost, each lane its own running sum. Vector lanes never mix, and the kernel is compiled
// without fused multiply-add (the clones below enable AVX2, which implies no FMA), so every
// lane performs the same float or double operations as the scalar loop.
#include "compiler/eval/contraction_kernel.h"

#include <algorithm>
#include <cstring>

// Builds the kernel for AVX2 hosts as well as the baseline, picking one at load time.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TPUSIM_KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TPUSIM_KERNEL_CLONES
#endif

namespace tpusim::eval {
namespace {

template <typename T>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(32)));
};

constexpr int kRowBlock = 4;
// Bytes of A rows worked on together across all panels (kept in the core's L2).
constexpr int64_t kRowChunkBytes = 256 * 1024;

// acc[r][0..W) += a[r][kk] * panel[run row][0..W) over the runs, for MR rows.
template <typename T, int MR>
__attribute__((always_inline)) inline void MicroKernel(const T* a, int64_t lda,
                                                       std::span<const KRun> runs, const T* panel,
                                                       T* acc, int64_t acc_ld) {
  using V = typename VecOf<T>::type;
  constexpr int64_t kLanes = sizeof(V) / sizeof(T);
  static_assert(2 * kLanes == kPanelWidth<T>);
  V c[MR][2];
  for (int r = 0; r < MR; ++r) {
    std::memcpy(&c[r][0], acc + r * acc_ld, sizeof(V));
    std::memcpy(&c[r][1], acc + r * acc_ld + kLanes, sizeof(V));
  }
  int64_t kk = 0;
  for (const KRun& run : runs) {
    const T* brow = panel + run.b_row * kPanelWidth<T>;
    for (int64_t t = 0; t < run.length; ++t, ++kk, brow += kPanelWidth<T>) {
      V b0, b1;
      std::memcpy(&b0, brow, sizeof(V));
      std::memcpy(&b1, brow + kLanes, sizeof(V));
      for (int r = 0; r < MR; ++r) {
        const T x = a[r * lda + kk];
        c[r][0] += b0 * x;
        c[r][1] += b1 * x;
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    std::memcpy(acc + r * acc_ld, &c[r][0], sizeof(V));
    std::memcpy(acc + r * acc_ld + kLanes, &c[r][1], sizeof(V));
  }
}

template <typename T>
__attribute__((always_inline)) inline void AccumulateRowsImpl(const T* a, int64_t lda, int64_t rows,
                                                              std::span<const KRun> runs,
                                                              const PanelMatrix<T>& b, T* acc,
                                                              int64_t acc_ld) {
  int64_t k = 0;
  for (const KRun& run : runs) k += run.length;
  const int64_t fit = kRowChunkBytes / static_cast<int64_t>(sizeof(T)) / std::max<int64_t>(k, 1);
  const int64_t chunk = std::max<int64_t>(kRowBlock, fit / kRowBlock * kRowBlock);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t r1 = std::min(rows, r0 + chunk);
    for (int64_t p = 0; p < b.Panels(); ++p) {
      const T* panel = b.Panel(p);
      T* accp = acc + p * kPanelWidth<T>;
      int64_t r = r0;
      for (; r + kRowBlock <= r1; r += kRowBlock) {
        MicroKernel<T, kRowBlock>(a + r * lda, lda, runs, panel, accp + r * acc_ld, acc_ld);
      }
      switch (r1 - r) {
        case 3:
          MicroKernel<T, 3>(a + r * lda, lda, runs, panel, accp + r * acc_ld, acc_ld);
          break;
        case 2:
          MicroKernel<T, 2>(a + r * lda, lda, runs, panel, accp + r * acc_ld, acc_ld);
          break;
        case 1:
          MicroKernel<T, 1>(a + r * lda, lda, runs, panel, accp + r * acc_ld, acc_ld);
          break;
        default:
          break;
      }
    }
  }
}

TPUSIM_KERNEL_CLONES void AccumulateRowsF32(const float* a, int64_t lda, int64_t rows,
                                            std::span<const KRun> runs, const PanelMatrix<float>& b,
                                            float* acc, int64_t acc_ld) {
  AccumulateRowsImpl(a, lda, rows, runs, b, acc, acc_ld);
}

TPUSIM_KERNEL_CLONES void AccumulateRowsF64(const double* a, int64_t lda, int64_t rows,
                                            std::span<const KRun> runs,
                                            const PanelMatrix<double>& b, double* acc,
                                            int64_t acc_ld) {
  AccumulateRowsImpl(a, lda, rows, runs, b, acc, acc_ld);
}

}  // namespace

void AccumulateRows(const float* a, int64_t lda, int64_t rows, std::span<const KRun> runs,
                    const PanelMatrix<float>& b, float* acc, int64_t acc_ld) {
  AccumulateRowsF32(a, lda, rows, runs, b, acc, acc_ld);
}

void AccumulateRows(const double* a, int64_t lda, int64_t rows, std::span<const KRun> runs,
                    const PanelMatrix<double>& b, double* acc, int64_t acc_ld) {
  AccumulateRowsF64(a, lda, rows, runs, b, acc, acc_ld);
}

}  // namespace tpusim::eval
