// Batch norm over values that stream flat (feature_stream.h): the passes over the
// [rows, features] matrices are feature streams, and everything per feature (folding the
// sums, gamma / sqrt(var + eps), ...) runs on pattern vregs in VMEM: a [features] vector
// laid out as the streamed vregs see it, so it is loaded straight into their registers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpusim::lowering {

// Elementwise work fused into batch-norm-training's normalizing pass: VPU lines that read the
// normalized f32 value in v8 (and a second [rows, features] matrix in v1, when there is
// one), with temps in v9..v23 and constants in v27..v29 set by `prologue`; the stored result
// is `result`.
struct FlatEpilogue {
  std::vector<std::string> prologue, body;
  int result = 8;
  uint64_t extra = 0;   // HBM address of the second matrix
  int extra_bytes = 0;  // its bytes per element: 0 (none), 2 or 4
};

// batch-norm-grad's dy computed per vreg from up to three matrices instead of read (its
// producer fused, e.g. ReLU's gradient select(y > 0, g, 0), or at a residual junction
// select(y > 0, g1 + g2, 0)): `build(regs)` gives the lines computing dy from the matrices
// loaded into registers regs.matrices[0], [1], ..., with temps from regs.first_temp and
// constants in regs.first_const..last_const set by its prologue. With `store`, the pass that
// sums dy also writes it there (its other readers), and the dx pass reads it back instead of
// the matrices. With `beta`, the producer may also read x normalized as the training pass
// normalized it, (x - mean) * (gamma / sqrt(var + eps)) + beta: the normalize duplicated
// into the gradient (ReLU's mask recomputed from x, which the passes read anyway, instead of
// reading y); its registers are regs.x, .mean, .scale and .beta.
struct FlatCode {
  std::vector<std::string> prologue, body;
  int result = 0;
};
struct FlatDyRegisters {
  std::vector<int> matrices;
  int x = 0, mean = 24, scale = -1, beta = -1;  // scale, beta: only with a normalize
  int first_temp = 0, first_const = 28, last_const = 29;
};
// The training pass's per-element normalize, (x - mean) * scale + beta, as VPU lines over
// registers x, mean, scale and beta with temps t, t + 1, t + 2 (the result): the normalizing
// pass and a gradient recomputing it share them, so the two give the same bits.
std::vector<std::string> FlatNormalizeLines(int x, int mean, int scale, int beta, int t);

// The registers of dy's producer in the statistics pass (`dx_pass` false: x in v1, temps from
// v8) or in the dx pass (x in v0, temps from v11): the `matrices` load into v0 .. v3 in order,
// skipping x's. The fusion's exactness check builds dy's code for the same registers the
// kernel will use.
FlatDyRegisters FlatDyPassRegisters(size_t matrices, bool normalize, bool dx_pass);

struct FlatDyProducer {
  std::vector<std::pair<uint64_t, int>> matrices;  // (HBM address, bytes per element)
  std::function<FlatCode(const FlatDyRegisters&)> build;
  std::optional<uint64_t> store;
  std::optional<uint64_t> beta;  // HBM f32[features]: the producer reads x normalized
};

class FlatBatchNorm {
 public:
  FlatBatchNorm(int64_t rows, int64_t features, double epsilon, std::string tag);

  // Bytes per element of the [rows, features] matrices: x, dy (grad) and the result (y or
  // dx): 4 (f32, the default) or 2 (bf16, widened on load, rounded to nearest even on
  // store). Per-feature vectors stay f32.
  void SetMatrixBytes(int x, int dy, int result) {
    x_bytes_ = x, dy_bytes_ = dy, out_bytes_ = result;
  }

  // Whether [rows, features] f32 values stream flat (and fit this kernel's VMEM areas).
  static bool Takes(int64_t rows, int64_t features);
  // The VMEM its passes touch, from 0: the feature stream's buffers, the pattern areas and
  // the spread accumulator rows (LoweredOp::vmem_bytes: a kernel beside a collective).
  static int64_t VmemBytes();

  // The op's passes (operands and results are HBM addresses).
  // With `epilogue`, `y` receives the epilogue's result instead of the normalized value;
  // a statistic without an address (nothing reads it) is not stored.
  std::string Training(uint64_t x, uint64_t gamma, uint64_t beta, uint64_t y,
                       std::optional<uint64_t> mean, std::optional<uint64_t> var,
                       const FlatEpilogue* epilogue = nullptr);
  // The same from the per-feature sums of x and of its squares, already in HBM (a
  // convolution computed them as it drained x): no pass over x for the statistics.
  std::string TrainingFromSums(uint64_t x, uint64_t gamma, uint64_t beta, uint64_t sum,
                               uint64_t sum_squares, uint64_t y, std::optional<uint64_t> mean,
                               std::optional<uint64_t> var, const FlatEpilogue* epilogue);
  // Per-feature sums of one or two values computed per element (the expanded batch norm's
  // statistics pass): one read of the matrices (HBM address, bytes per element) into v0..;
  // the f32[features] `vectors` as patterns in v24..; `body` accumulates into v30 (and v31)
  // after `prologue`; each sum goes to its `sums` address (HBM f32[features]), if it has one.
  // With `output`, the stream also stores register `result` per element there (a producer
  // fused with the sums that read it; `output_bytes` 4 or 2).
  std::string ColumnSums(const std::vector<std::pair<uint64_t, int>>& matrices,
                         const std::vector<uint64_t>& vectors, std::vector<std::string> prologue,
                         std::vector<std::string> body,
                         const std::vector<std::optional<uint64_t>>& sums, int result = 0,
                         std::optional<uint64_t> output = std::nullopt, int output_bytes = 4);
  // The same stream storing the body's `result` register per element to `output` (HBM
  // [rows, features], `output_bytes` 4 or 2: f32 or bf16, rounded to nearest even).
  std::string ColumnMap(const std::vector<std::pair<uint64_t, int>>& matrices,
                        const std::vector<uint64_t>& vectors, std::vector<std::string> prologue,
                        std::vector<std::string> body, int result, uint64_t output,
                        int output_bytes);
  std::string Inference(uint64_t x, uint64_t gamma, uint64_t beta, uint64_t mean, uint64_t var,
                        uint64_t y);
  // With `producer`, dy is computed from its matrices (`dy` is not read). A statistic
  // without an address (nothing reads it) is not stored.
  std::string Grad(uint64_t x, uint64_t gamma, uint64_t mean, uint64_t var, uint64_t dy,
                   uint64_t dx, std::optional<uint64_t> dgamma, std::optional<uint64_t> dbeta,
                   const FlatDyProducer* producer = nullptr);

 private:
  int64_t Period() const;
  void Expand(uint64_t hbm, int area);  // a [features] vector from HBM into a pattern
  std::vector<int> ExpandAll(const std::vector<uint64_t>& vectors);  // into areas 2, 3, ...
  void Fold(int accumulator, int area);  // an accumulator's per-feature totals
  void Math(const std::vector<int>& in, const std::vector<std::string>& body,
            const std::vector<std::pair<int, int>>& out);  // (register, area) results
  void Store(int area, uint64_t hbm);                      // a pattern's [features] vector to HBM
  void Flush();                                            // waits for the stores; ends the block
  // `inputs`: (HBM address, bytes per element); the output has out_bytes_ per element.
  // `output_bytes` 0: the result's (out_bytes_); with `accumulate`, a non-zero one also stores.
  // `accumulate` sums into areas 0 and 1 (v30, v31), and with `third` also area 10 (v29).
  void Stream(std::vector<std::pair<uint64_t, int>> inputs, std::vector<int> patterns,
              bool accumulate, std::vector<std::string> body, int result, uint64_t output,
              std::vector<std::string> prologue = {}, int output_bytes = 0, bool third = false);
  std::string Desc(const std::string& text);

  // One read of x: the areas that hold the per-feature sums of x and of x^2.
  std::pair<int, int> Sums(uint64_t x);
  // From the sums' areas and gamma (area 2): mean, var and gamma / sqrt(var + eps) into
  // areas 6, 7, 8.
  void Statistics(std::pair<int, int> sums);
  // Stores the statistics computed so (when asked) and streams the normalized x (beta in
  // area 3), or the epilogue's result, to y.
  std::string Normalize(uint64_t x, uint64_t y, std::optional<uint64_t> mean,
                        std::optional<uint64_t> var, const FlatEpilogue* epilogue);
  // One read of dy and x (mean in area 2): the areas of sum(dy) and sum(dy * (x - mean)).
  std::pair<int, int> GradSums(uint64_t x, uint64_t dy, const FlatDyProducer* producer);
  // From those sums, gamma (area 3) and var (area 4): dbeta and dgamma stored, dx streamed.
  void GradFinish(std::pair<int, int> sums, uint64_t x, uint64_t dy, uint64_t dx,
                  std::optional<uint64_t> dgamma, std::optional<uint64_t> dbeta,
                  const FlatDyProducer* producer);

  int64_t rows_, features_;
  double epsilon_;
  std::string tag_, code_;
  int descs_ = 0, streams_ = 0, stores_ = 0;
  bool block_ = false;  // inside a per-feature block (flags and constants set)
  int x_bytes_ = 4, dy_bytes_ = 4, out_bytes_ = 4;
};

}  // namespace tpusim::lowering
