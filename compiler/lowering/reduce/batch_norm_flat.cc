#include "compiler/lowering/reduce/batch_norm_flat.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/reduce/feature_stream.h"

namespace tpusim::lowering {
namespace {

constexpr int64_t kVregBytes = 4096;
// VMEM above the feature stream's buffers: pattern areas of up to 64 vregs, and
// the rows of an accumulator spread one per vreg for folding (up to 128 vregs).
constexpr uint64_t kAreaBytes = 64 * kVregBytes;
constexpr uint64_t kAreas = kFeatureStreamVmemBytes;
constexpr int kAreaCount = 12;
constexpr uint64_t kSpread = kAreas + kAreaCount * kAreaBytes;
constexpr int64_t kMaxSpread = 128;
static_assert(kSpread + kMaxSpread * kVregBytes <= (16u << 20));  // v3's VMEM

uint64_t Area(int i) { return kAreas + static_cast<uint64_t>(i) * kAreaBytes; }

}  // namespace

int64_t FlatBatchNorm::VmemBytes() {
  return static_cast<int64_t>(kSpread + kMaxSpread * kVregBytes);
}

namespace {

std::string V(int r) { return "v" + std::to_string(r); }

// scale = gamma / sqrt(var + eps) (eps in v25) with temps t, t + 1, into `dst`: the statistics
// block and the gradient's both compute it so.
std::vector<std::string> ScaleLines(int gamma, int var, int t, int dst) {
  return {"vadd " + V(t) + ", " + V(var) + ", v25", "vsqrt " + V(t + 1) + ", " + V(t),
          "vdiv " + V(dst) + ", " + V(gamma) + ", " + V(t + 1)};
}

// The areas the gradient's passes load as patterns into v24, v25, ... (FeatureStream):
// mean (2); with a normalize, its scale (8) and beta (11); the dx pass also s / rows /
// (var + eps) (9) and dy's mean (10).
constexpr int kMeanArea = 2, kScaleArea = 8, kBetaArea = 11;
// A column-sums stream's third sum (Stream's `third`) and where it folds to.
constexpr int kThirdSumArea = 10, kThirdFoldArea = 11;
std::vector<int> GradPatterns(bool normalize, bool dx_pass) {
  std::vector<int> areas = {kMeanArea};
  if (dx_pass) areas.insert(areas.end(), {kScaleArea, 9, 10});
  if (normalize && !dx_pass) areas.push_back(kScaleArea);
  if (normalize) areas.push_back(kBetaArea);
  return areas;
}

// The register pattern `area` loads into (v24 + its place in `patterns`).
int PatternRegister(const std::vector<int>& patterns, int area) {
  return 24 +
         static_cast<int>(std::find(patterns.begin(), patterns.end(), area) - patterns.begin());
}

std::string F32Immediate(double value) {
  const float f = static_cast<float>(value);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  char text[32];
  std::snprintf(text, sizeof text, "f32:0x%08x", bits);
  return text;
}

}  // namespace

FlatBatchNorm::FlatBatchNorm(int64_t rows, int64_t features, double epsilon, std::string tag)
    : rows_(rows), features_(features), epsilon_(epsilon), tag_(std::move(tag)) {}

bool FlatBatchNorm::Takes(int64_t rows, int64_t features) {
  if (features <= 0 || rows <= 0) return false;
  if (features % 1024 == 0)
    return kFeatureStreamChunkVregs % (features / 1024) == 0 &&
           features / 1024 * kVregBytes <= static_cast<int64_t>(kAreaBytes);
  return 1024 % features == 0 && 1024 / features <= kMaxSpread && rows * features % 1024 == 0;
}

int64_t FlatBatchNorm::Period() const { return features_ >= 1024 ? features_ / 1024 : 1; }

std::string FlatBatchNorm::Desc(const std::string& text) {
  const std::string name = "bnd" + std::to_string(descs_++);
  code_ = ".desc " + name + " " + text + "\n" + code_;
  return name;
}

// Per-feature work between streams is a block: f8 counts DMA arrivals the VPU waits for,
// f9 VPU progress the DMA waits for, f10 stores to HBM; v24..v26 hold 1/rows, eps, 0.
static std::string BlockStart(int64_t rows, double epsilon) {
  return "    sflag f8, 0\n    sflag f9, 0\n    sflag f10, 0\n    vmovi v24, " +
         F32Immediate(1.0 / static_cast<double>(rows)) + "\n    vmovi v25, " +
         F32Immediate(epsilon) + "\n    vmovi v26, 0.0\n";
}

void FlatBatchNorm::Expand(uint64_t hbm, int area) {
  if (!block_) code_ += BlockStart(rows_, epsilon_), block_ = true;
  const int64_t row = features_ * 4, copies = std::max<int64_t>(1, 1024 / features_);
  const std::string d =
      Desc("rows=" + std::to_string(copies) + " row_bytes=" + std::to_string(row) +
           " src_stride=0 dst_stride=" + std::to_string(row));
  code_ += assembly::LoadAddress(1, hbm, 3) + "    li r2, " + std::to_string(Area(area)) +
           "\n    dma.hv r2, r1, " + d + ", f8\n    wait vpu, f8, 1\n";
}

void FlatBatchNorm::Fold(int accumulator, int area) {
  if (!block_) code_ += BlockStart(rows_, epsilon_), block_ = true;
  const int64_t k = 1024 / features_, row = features_ * 4;
  // Row r of the accumulator vreg, repeated over vreg r of the spread area, by one DMA.
  const std::string d =
      Desc("rows=" + std::to_string(k) + " row_bytes=" + std::to_string(row) +
           " src_stride=0 dst_stride=" + std::to_string(row) + " planes=" + std::to_string(k) +
           " src_plane_stride=" + std::to_string(row) + " dst_plane_stride=4096");
  std::ostringstream s;
  s << "    signal vpu, f9, 1\n    wait dma, f9, 1\n    li r1, " << kSpread << "\n    li r2, "
    << Area(accumulator) << "\n    dma.vv r1, r2, " << d << ", f8\n    wait vpu, f8, 1\n"
    << "    vmovi v6, 0.0\n    li r4, " << k << "\n    vloop r4, 2\n    vlds v0, r1, 4096\n"
    << "    vadd v6, v6, v0\n    li r2, " << Area(area) << "\n    vst v6, r2\n";
  code_ += s.str();
}

void FlatBatchNorm::Math(const std::vector<int>& in, const std::vector<std::string>& body,
                         const std::vector<std::pair<int, int>>& out) {
  if (!block_) code_ += BlockStart(rows_, epsilon_), block_ = true;
  std::ostringstream s;
  for (size_t i = 0; i < in.size(); ++i) s << "    li r" << 7 + i << ", " << Area(in[i]) << "\n";
  for (size_t j = 0; j < out.size(); ++j)
    s << "    li r" << 13 + j << ", " << Area(out[j].second) << "\n";
  s << "    li r4, " << Period() << "\n    vloop r4, " << in.size() + body.size() + out.size()
    << "\n";
  for (size_t i = 0; i < in.size(); ++i) s << "    vlds v" << i << ", r" << 7 + i << ", 4096\n";
  for (const std::string& line : body) s << "    " << line << "\n";
  for (size_t j = 0; j < out.size(); ++j)
    s << "    vsts v" << out[j].first << ", r" << 13 + j << ", 4096\n";
  code_ += s.str();
}

void FlatBatchNorm::Store(int area, uint64_t hbm) {
  if (!block_) code_ += BlockStart(rows_, epsilon_), block_ = true;
  const std::string d =
      Desc("rows=1 row_bytes=" + std::to_string(features_ * 4) + " src_stride=0 dst_stride=0");
  code_ += "    signal vpu, f9, 1\n    wait dma, f9, 1\n" + assembly::LoadAddress(1, hbm, 3) +
           "    li r2, " + std::to_string(Area(area)) + "\n    dma.vh r1, r2, " + d + ", f10\n";
  ++stores_;
}

void FlatBatchNorm::Flush() {
  if (stores_) code_ += "    wait seq, f10, " + std::to_string(stores_) + "\n";
  stores_ = 0, block_ = false;
}

void FlatBatchNorm::Stream(std::vector<std::pair<uint64_t, int>> inputs, std::vector<int> patterns,
                           bool accumulate, std::vector<std::string> body, int result,
                           uint64_t output, std::vector<std::string> prologue, int output_bytes,
                           bool third) {
  Flush();
  FeatureStream st;
  st.vregs = rows_ * features_ / 1024, st.period = Period();
  for (const auto& [address, bytes] : inputs) {
    st.inputs.push_back(address);
    st.input_bytes.push_back(bytes);
  }
  st.output_bytes = output_bytes ? output_bytes : out_bytes_;
  for (int p : patterns) st.patterns.push_back(Area(p));
  if (accumulate) st.accumulators = {Area(0), Area(1)}, st.sums_and_output = output_bytes != 0;
  if (accumulate && third) st.accumulators.push_back(Area(kThirdSumArea));
  st.prologue = std::move(prologue);
  st.body = std::move(body), st.result = result, st.output = output, st.tag = tag_;
  code_ += assembly::ScopeKernel(FeatureStreamKernel(st), "fs" + std::to_string(streams_++) + "_");
}

// Sums of x and x^2 in one read (var = E[x^2] - mean^2, clamped at 0, as XLA's batch norm
// expander computes it), then y = (x - mean) * gamma / sqrt(var + eps) + beta.
std::pair<int, int> FlatBatchNorm::Sums(uint64_t x) {
  Stream({{x, x_bytes_}}, {}, true, {"vadd v30, v30, v0", "vmul v6, v0, v0", "vadd v31, v31, v6"},
         0, 0);
  if (features_ >= 1024) return {0, 1};  // the accumulators hold the sums as patterns already
  Fold(0, 4), Fold(1, 5);
  return {4, 5};
}

void FlatBatchNorm::Statistics(std::pair<int, int> sums) {
  std::vector<std::string> body = {"vmul v6, v0, v24", "vmul v7, v1, v24", "vmul v8, v6, v6",
                                   "vsub v9, v7, v8", "vmax v10, v9, v26"};
  for (std::string& line : ScaleLines(/*gamma=*/2, /*var=*/10, 11, 13)) body.push_back(line);
  Math({sums.first, sums.second, 2}, body,
       {{6, 6}, {10, 7}, {13, 8}});  // mean, var, gamma / sqrt(var + eps)
}

std::string FlatBatchNorm::Training(uint64_t x, uint64_t gamma, uint64_t beta, uint64_t y,
                                    std::optional<uint64_t> mean, std::optional<uint64_t> var,
                                    const FlatEpilogue* epilogue) {
  Expand(gamma, 2), Expand(beta, 3);
  Statistics(Sums(x));
  return Normalize(x, y, mean, var, epilogue);
}

std::string FlatBatchNorm::TrainingFromSums(uint64_t x, uint64_t gamma, uint64_t beta, uint64_t sum,
                                            uint64_t sum_squares, uint64_t y,
                                            std::optional<uint64_t> mean,
                                            std::optional<uint64_t> var,
                                            const FlatEpilogue* epilogue) {
  Expand(gamma, 2), Expand(beta, 3), Expand(sum, 4), Expand(sum_squares, 5);
  Statistics({4, 5});
  return Normalize(x, y, mean, var, epilogue);
}

// After Statistics: stores mean and var, then the normalizing pass (with the epilogue).
std::string FlatBatchNorm::Normalize(uint64_t x, uint64_t y, std::optional<uint64_t> mean,
                                     std::optional<uint64_t> var, const FlatEpilogue* epilogue) {
  if (mean) Store(6, *mean);
  if (var) Store(7, *var);
  std::vector<std::pair<uint64_t, int>> inputs = {{x, x_bytes_}};
  std::vector<std::string> body = FlatNormalizeLines(0, 24, 25, 26, 6);
  if (!epilogue) {
    Stream(inputs, {6, 8, 3}, false, body, 8, y);
    return code_;
  }
  if (epilogue->extra_bytes) inputs.push_back({epilogue->extra, epilogue->extra_bytes});
  body.insert(body.end(), epilogue->body.begin(), epilogue->body.end());
  Stream(inputs, {6, 8, 3}, false, body, epilogue->result, y, epilogue->prologue);
  return code_;
}

// The vectors into pattern areas 2, 3, ...
std::vector<int> FlatBatchNorm::ExpandAll(const std::vector<uint64_t>& vectors) {
  std::vector<int> areas;
  for (uint64_t v : vectors) {
    areas.push_back(2 + static_cast<int>(areas.size()));
    Expand(v, areas.back());
  }
  return areas;
}

std::string FlatBatchNorm::ColumnSums(const std::vector<std::pair<uint64_t, int>>& matrices,
                                      const std::vector<uint64_t>& vectors,
                                      std::vector<std::string> prologue,
                                      std::vector<std::string> body,
                                      const std::vector<std::optional<uint64_t>>& sums, int result,
                                      std::optional<uint64_t> output, int output_bytes) {
  const std::vector<int> patterns = ExpandAll(vectors);
  Stream(matrices, patterns, true, std::move(body), result, output.value_or(0), std::move(prologue),
         output ? output_bytes : 0, sums.size() > 2);
  for (size_t k = 0; k < sums.size(); ++k) {
    if (!sums[k]) continue;  // nothing reads it
    // the accumulators hold patterns from 1024 features; fewer fold first
    const int area = k < 2 ? static_cast<int>(k) : kThirdSumArea;
    const int folded = k < 2 ? 8 + area : kThirdFoldArea;
    if (features_ < 1024) Fold(area, folded);
    Store(features_ < 1024 ? folded : area, *sums[k]);
  }
  Flush();
  return code_;
}

std::string FlatBatchNorm::ColumnMap(const std::vector<std::pair<uint64_t, int>>& matrices,
                                     const std::vector<uint64_t>& vectors,
                                     std::vector<std::string> prologue,
                                     std::vector<std::string> body, int result, uint64_t output,
                                     int output_bytes) {
  const std::vector<int> patterns = ExpandAll(vectors);
  Stream(matrices, patterns, false, std::move(body), result, output, std::move(prologue),
         output_bytes);
  return code_;
}

std::string FlatBatchNorm::Inference(uint64_t x, uint64_t gamma, uint64_t beta, uint64_t mean,
                                     uint64_t var, uint64_t y) {
  Expand(gamma, 2), Expand(beta, 3), Expand(mean, 4), Expand(var, 5);
  Math({2, 5}, {"vadd v6, v1, v25", "vsqrt v7, v6", "vdiv v8, v0, v7"}, {{8, 8}});
  Stream({{x, x_bytes_}}, {4, 8, 3}, false, FlatNormalizeLines(0, 24, 25, 26, 6), 8, y);
  return code_;
}

// dbeta = sum(dy) and s = sum(dy * (x - mean)) in one read of dy and x; dgamma =
// s / sqrt(var + eps); dx = gamma / sqrt(var + eps) * (dy - dbeta / rows - (x - mean) * s /
// rows / (var + eps)) in a second.
std::string FlatBatchNorm::Grad(uint64_t x, uint64_t gamma, uint64_t mean, uint64_t var,
                                uint64_t dy, uint64_t dx, std::optional<uint64_t> dgamma,
                                std::optional<uint64_t> dbeta, const FlatDyProducer* producer) {
  Expand(mean, 2), Expand(gamma, 3), Expand(var, 4);
  if (producer && producer->beta) {
    // The normalize's beta (area 11) and scale gamma / sqrt(var + eps) (area 8), computed
    // with the training pass's operations (Statistics), so the normalized x is its bits.
    Expand(*producer->beta, kBetaArea);
    Math({3, 4}, ScaleLines(/*gamma=*/0, /*var=*/1, 6, 8), {{8, kScaleArea}});
  }
  const std::pair<int, int> sums = GradSums(x, dy, producer);
  if (producer && producer->store)  // the dx pass reads the dy the sums pass wrote
    GradFinish(sums, x, *producer->store, dx, dgamma, dbeta, nullptr);
  else
    GradFinish(sums, x, dy, dx, dgamma, dbeta, producer);
  return code_;
}

// The inputs of a pass that reads x and dy: x in v1 (statistics pass) or v0 (dx pass) and
// dy in the other of v0, v1, loaded, or (`producer`) computed from its matrices, loaded into
// the registers v0 .. v3 that x leaves, by `code` (FlatDyPassRegisters); `dy` names dy's
// register.
struct GradInputs {
  std::vector<std::pair<uint64_t, int>> inputs;
  FlatCode code;
  std::string dy;
};

std::vector<std::string> FlatNormalizeLines(int x, int mean, int scale, int beta, int t) {
  return {"vsub " + V(t) + ", " + V(x) + ", " + V(mean),
          "vmul " + V(t + 1) + ", " + V(t) + ", " + V(scale),
          "vadd " + V(t + 2) + ", " + V(t + 1) + ", " + V(beta)};
}

// The pattern registers follow GradPatterns; constants take what the patterns leave of
// v28, v29.
FlatDyRegisters FlatDyPassRegisters(size_t matrices, bool normalize, bool dx_pass) {
  FlatDyRegisters r;
  r.x = dx_pass ? 0 : 1;
  for (int k = 0; r.matrices.size() < matrices; ++k)
    if (k != r.x) r.matrices.push_back(k);
  r.first_temp = dx_pass ? 11 : 8;
  const std::vector<int> patterns = GradPatterns(normalize, dx_pass);
  r.mean = PatternRegister(patterns, kMeanArea);
  if (normalize) {
    r.scale = PatternRegister(patterns, kScaleArea);
    r.beta = PatternRegister(patterns, kBetaArea);
  }
  r.first_const = std::max(28, 24 + static_cast<int>(patterns.size()));
  return r;
}

static GradInputs WithDy(uint64_t x, int x_bytes, uint64_t dy, int dy_bytes, bool dx_pass,
                         const FlatDyProducer* producer) {
  GradInputs g;
  const int x_reg = dx_pass ? 0 : 1;
  if (!producer) {
    g.inputs.resize(2);
    g.inputs[static_cast<size_t>(x_reg)] = {x, x_bytes};
    g.inputs[static_cast<size_t>(1 - x_reg)] = {dy, dy_bytes};
    g.dy = "v" + std::to_string(1 - x_reg);
    return g;
  }
  const FlatDyRegisters regs =
      FlatDyPassRegisters(producer->matrices.size(), producer->beta.has_value(), dx_pass);
  g.inputs.resize(producer->matrices.size() + 1);
  g.inputs[static_cast<size_t>(x_reg)] = {x, x_bytes};
  for (size_t k = 0; k < regs.matrices.size(); ++k)
    g.inputs[static_cast<size_t>(regs.matrices[k])] = producer->matrices[k];
  g.code = producer->build(regs);
  g.dy = "v" + std::to_string(g.code.result);
  return g;
}

std::pair<int, int> FlatBatchNorm::GradSums(uint64_t x, uint64_t dy,
                                            const FlatDyProducer* producer) {
  // dy (v0, or computed), x in v1; a producer's temps after the body's (v6, v7). With a
  // store, the computed dy goes out too.
  GradInputs g = WithDy(x, x_bytes_, dy, dy_bytes_, /*dx_pass=*/false, producer);
  std::vector<std::string> body = g.code.body;
  const std::vector<int> patterns = GradPatterns(producer && producer->beta, /*dx_pass=*/false);
  for (const std::string& line : {"vadd v30, v30, " + g.dy, std::string("vsub v6, v1, v24"),
                                  "vmul v7, " + g.dy + ", v6", std::string("vadd v31, v31, v7")})
    body.push_back(line);
  if (producer && producer->store)
    Stream(g.inputs, patterns, true, body, g.code.result, *producer->store, g.code.prologue,
           dy_bytes_);
  else
    Stream(g.inputs, patterns, true, body, 0, 0, g.code.prologue);
  if (features_ >= 1024) return {0, 1};
  Fold(0, 5), Fold(1, 6);
  return {5, 6};
}

void FlatBatchNorm::GradFinish(std::pair<int, int> sums, uint64_t x, uint64_t dy, uint64_t dx,
                               std::optional<uint64_t> dgamma, std::optional<uint64_t> dbeta,
                               const FlatDyProducer* producer) {
  const auto [sum, s] = sums;
  std::vector<std::string> math = ScaleLines(/*gamma=*/2, /*var=*/3, 6, 9);
  math.insert(math.begin() + 2, "vdiv v8, v1, v7");  // dgamma = s / sqrt(var + eps)
  math.insert(math.end(), {"vmul v10, v1, v24", "vdiv v11, v10, v6", "vmul v12, v0, v24"});
  Math({sum, s, 3, 4}, math,
       {{8, 7},
        {9, kScaleArea},
        {11, 9},
        {12, 10}});  // dgamma, scale, s / rows / (var + eps), dy mean
  if (dbeta) Store(sum, *dbeta);
  if (dgamma) Store(7, *dgamma);
  // x in v0, dy (v1, or computed); a producer's temps after the body's (v6..v10).
  GradInputs g = WithDy(x, x_bytes_, dy, dy_bytes_, /*dx_pass=*/true, producer);
  std::vector<std::string> body = g.code.body;
  for (const std::string& line : {std::string("vsub v6, v0, v24"), std::string("vmul v7, v6, v26"),
                                  "vsub v8, " + g.dy + ", v27", std::string("vsub v9, v8, v7"),
                                  std::string("vmul v10, v25, v9")})
    body.push_back(line);
  Stream(g.inputs, GradPatterns(producer && producer->beta, /*dx_pass=*/true), false, body, 10, dx,
         g.code.prologue);
}

}  // namespace tpusim::lowering
