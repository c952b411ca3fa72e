// The inner product engine of dot and convolution: rows of A times a matrix B laid out in
// column panels, every output element summed in exactly the order of its contracted
// elements (one multiply, then one add, in the accumulation type T), so results are
// bit-identical to a plain loop `acc += a[k] * b[k]`. Speed comes from computing many output
// columns (SIMD lanes) and rows at once, never from reordering a sum.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tpusim::eval {

// Output columns per panel: two 32-byte vectors of T.
template <typename T>
inline constexpr int64_t kPanelWidth = 64 / sizeof(T);

// B (k_rows x cols) stored as panels of kPanelWidth<T> columns: panel p holds rows
// 0..k_rows-1 of columns [p*W, p*W + W), row-major; columns past `cols` are zero.
template <typename T>
struct PanelMatrix {
  int64_t k_rows = 0, cols = 0;
  std::vector<T> data;

  PanelMatrix(int64_t k, int64_t c) : k_rows(k), cols(c), data(Panels() * k * kPanelWidth<T>) {}
  int64_t Panels() const { return (cols + kPanelWidth<T> - 1) / kPanelWidth<T>; }
  T& at(int64_t k, int64_t col) {
    return data[static_cast<size_t>(((col / kPanelWidth<T>)*k_rows + k) * kPanelWidth<T> +
                                    col % kPanelWidth<T>)];
  }
  const T* Panel(int64_t p) const { return data.data() + p * k_rows * kPanelWidth<T>; }
};

// A contiguous run of contracted elements: B rows [b_row, b_row + length) pair with the next
// `length` elements of every A row.
struct KRun {
  int64_t b_row, length;
  bool operator==(const KRun&) const = default;
};

// For r < rows and j < b.cols: acc[r * acc_ld + j] += a[r * lda + kk] * B[run row][j] for the
// elements of `runs` in order (kk counts 0, 1, ... through the runs), each term rounded to T
// and added to the running T sum. acc_ld >= b.Panels() * kPanelWidth<T> (padding columns
// are scratch).
void AccumulateRows(const float* a, int64_t lda, int64_t rows, std::span<const KRun> runs,
                    const PanelMatrix<float>& b, float* acc, int64_t acc_ld);
void AccumulateRows(const double* a, int64_t lda, int64_t rows, std::span<const KRun> runs,
                    const PanelMatrix<double>& b, double* acc, int64_t acc_ld);

}  // namespace tpusim::eval
