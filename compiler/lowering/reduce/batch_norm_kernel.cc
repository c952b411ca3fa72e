#include "compiler/lowering/reduce/batch_norm_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/reduce/batch_norm_flat.h"
#include "compiler/lowering/vpu/tile_kernel.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// Per-feature vectors passed between tiled passes: VMEM above the tiled kernel's buffers
// and index table (v3 has 16 MiB).
constexpr int64_t kMaxFeatures = 1 << 16;
constexpr uint64_t kVectorBytes = kMaxFeatures * 4;
constexpr uint64_t kVectors = kTileIndexTable + (1 << 20);
static_assert(kVectors + 2 * kVectorBytes <= (16u << 20));

// Registers the tiled passes' prologue sets (vpu_body.h keeps v24..v30 for constants).
constexpr const char* kInvRows = "v24";  // 1 / rows, f32
constexpr const char* kEpsilon = "v25";  // epsilon, f32

std::string F32Immediate(double value) {
  const float f = static_cast<float>(value);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  char text[32];
  std::snprintf(text, sizeof text, "f32:0x%08x", bits);
  return text;
}

// The [rows, features] view of the op and the passes it becomes.
struct BatchNorm {
  int64_t rows = 0, features = 0;
  std::vector<std::string> prologue;
  std::string tag;
  int mxus = 2;
  std::string code;
  int passes = 0;

  TileOperand Matrix(uint64_t address) const { return {address, features, 1}; }
  static TileOperand Vector(uint64_t address) { return {address, 0, 1}; }
  static TileOperand Scratch(int k) { return {kVectors + k * kVectorBytes, 0, 1, true}; }

  // A pass as a scoped sub-kernel; `barrier`: the units drain before the next one.
  void Add(const std::string& kernel, bool barrier = true) {
    code += assembly::ScopeKernel(kernel, "bn" + std::to_string(passes++) + "_");
    if (barrier) code += assembly::DrainBarrier(mxus);
  }

  // One pass of the tiled kernel over [rows, features] (`whole`) or [1, features].
  void Tile(bool whole, TileReduce reduce, std::vector<TileOperand> inputs,
            std::vector<std::string> body, int result, uint64_t output, bool to_vmem = false) {
    TileProgram p;
    p.rows = whole ? rows : 1, p.cols = features;
    p.inputs = std::move(inputs);
    p.prologue = prologue;
    p.body = std::move(body);
    p.result = result;
    p.reduce = reduce;
    p.output = output;
    p.output_vmem = to_vmem;
    p.tag = tag;
    Add(TileKernel(p));
  }
};

bool F32(const hlo::Shape& s) { return s.IsArray() && s.type == hlo::PrimitiveType::kF32; }

// gamma / sqrt(var + eps) into VMEM vector k.
void Scale(BatchNorm& bn, uint64_t gamma, uint64_t var, int k) {
  bn.Tile(false, TileReduce::kNone, {BatchNorm::Vector(gamma), BatchNorm::Vector(var)},
          {"vadd v6, v1, v25", "vsqrt v7, v6", "vdiv v8, v0, v7"}, 8, BatchNorm::Scratch(k).address,
          true);
}

// The mean, then the variance of x - mean, then the normalising pass.
void Training(BatchNorm& bn, const HloInstruction& instr, const OpContext& c, uint64_t y,
              uint64_t mean, uint64_t var) {
  const uint64_t x = c.address(instr.operand(0));
  const uint64_t gamma = c.address(instr.operand(1)), beta = c.address(instr.operand(2));
  using V = BatchNorm;
  bn.Tile(true, TileReduce::kCols, {bn.Matrix(x)}, {"vmul v6, v0, v24"}, 6, mean);
  bn.Tile(true, TileReduce::kCols, {bn.Matrix(x), V::Vector(mean)},
          {"vsub v6, v0, v1", "vmul v7, v6, v6", "vmul v8, v7, v24"}, 8, var);
  bn.Tile(true, TileReduce::kNone,
          {bn.Matrix(x), V::Vector(mean), V::Vector(var), V::Vector(gamma), V::Vector(beta)},
          {"vsub v6, v0, v1", "vadd v7, v2, v25", "vsqrt v8, v7", "vdiv v9, v6, v8",
           "vmul v10, v9, v3", "vadd v11, v10, v4"},
          11, y);
}

// Operands x, gamma, beta, mean, var.
void Inference(BatchNorm& bn, const HloInstruction& instr, const OpContext& c, uint64_t y) {
  std::vector<uint64_t> a;
  for (size_t k = 0; k < 5; ++k) a.push_back(c.address(instr.operand(k)));
  std::vector<TileOperand> in = {bn.Matrix(a[0])};
  for (size_t k = 1; k < 5; ++k) in.push_back(BatchNorm::Vector(a[k]));
  bn.Tile(true, TileReduce::kNone, in,
          {"vsub v6, v0, v3", "vadd v7, v4, v25", "vsqrt v8, v7", "vdiv v9, v6, v8",
           "vmul v10, v9, v1", "vadd v11, v10, v2"},
          11, y);
}

// dbeta = sum(dy); s = sum(dy * (x - mean)); dgamma = s / sqrt(var + eps);
// dx = gamma / sqrt(var + eps) * (dy - dbeta / rows - (x - mean) * s / rows / (var + eps)):
// the sums in two reads, then dx in one pass.
void Grad(BatchNorm& bn, const HloInstruction& instr, const OpContext& c, uint64_t dx,
          uint64_t dgamma, uint64_t dbeta) {
  const uint64_t x = c.address(instr.operand(0)), gamma = c.address(instr.operand(1));
  const uint64_t mean = c.address(instr.operand(2)), var = c.address(instr.operand(3));
  const uint64_t dy = c.address(instr.operand(4));
  using V = BatchNorm;
  bn.Tile(true, TileReduce::kCols, {bn.Matrix(dy)}, {}, 0, dbeta);
  bn.Tile(true, TileReduce::kCols, {bn.Matrix(dy), bn.Matrix(x), V::Vector(mean)},
          {"vsub v6, v1, v2", "vmul v7, v0, v6"}, 7, dgamma);  // s, for now
  Scale(bn, gamma, var, 0);
  bn.Tile(false, TileReduce::kNone, {V::Vector(dgamma), V::Vector(var)},
          {"vmul v6, v0, v24", "vadd v7, v1, v25", "vdiv v8, v6, v7"}, 8, V::Scratch(1).address,
          true);
  bn.Tile(true, TileReduce::kNone,
          {bn.Matrix(x), bn.Matrix(dy), V::Vector(mean), V::Scratch(0), V::Vector(dbeta),
           V::Scratch(1)},
          {"vsub v6, v0, v2", "vmul v7, v6, v5", "vmul v8, v4, v24", "vsub v9, v1, v8",
           "vsub v10, v9, v7", "vmul v11, v3, v10"},
          11, dx);
  bn.Tile(false, TileReduce::kNone, {V::Vector(dgamma), V::Vector(var)},
          {"vadd v6, v1, v25", "vsqrt v7, v6", "vdiv v8, v0, v7"}, 8, dgamma);
}

bool Bf16(const hlo::Shape& s) { return s.IsArray() && s.type == hlo::PrimitiveType::kBF16; }

// Bytes per element of a [rows, features] matrix of the op: 4 (f32) or 2 (bf16).
int MatrixBytes(const hlo::Shape& s) { return Bf16(s) ? 2 : 4; }

// The op's result matrix: y or dx.
const hlo::Shape& ResultMatrix(const HloInstruction& instr) {
  return instr.shape().IsTuple() ? instr.shape().tuple_shapes.at(0) : instr.shape();
}

// Whether the kernel takes the op's types and shape: feature_index the last dimension, f32
// per-feature vectors, and matrices (x, dy, the result) f32, or bf16 where the passes
// stream flat (mixed precision, as XLA's bf16 conversion folding leaves batch norm).
bool TakesTypes(const HloInstruction& instr) {
  const hlo::Shape& x = instr.operand(0)->shape();
  const std::optional<int64_t> fi = instr.GetInt("feature_index");
  if (x.dims.empty() || !fi || *fi != static_cast<int64_t>(x.dims.size()) - 1) return false;
  const bool grad = instr.opcode() == Opcode::kBatchNormGrad;
  std::vector<const hlo::Shape*> matrices = {&x, &ResultMatrix(instr)};
  if (grad) matrices.push_back(&instr.operand(4)->shape());
  bool any_bf16 = false;
  for (const hlo::Shape* m : matrices) {
    if (!F32(*m) && !Bf16(*m)) return false;
    any_bf16 = any_bf16 || Bf16(*m);
  }
  for (size_t k = 1; k < instr.operand_count(); ++k)
    if (!(grad && k == 4) && !F32(instr.operand(k)->shape())) return false;
  if (instr.shape().IsTuple())
    for (size_t k = 1; k < instr.shape().tuple_shapes.size(); ++k)
      if (!F32(instr.shape().tuple_shapes[k])) return false;
  const int64_t features = x.dims.back();
  const int64_t rows = features ? x.ElementCount() / features : 0;
  return !any_bf16 || FlatBatchNorm::Takes(rows, features);
}

}  // namespace

std::optional<uint64_t> TupleElementAddress(const HloInstruction& instr, int64_t k,
                                            const OpContext& c) {
  for (const auto& u : instr.parent()->instructions())
    if (u->opcode() == Opcode::kGetTupleElement && u->operand(0) == &instr &&
        u->GetInt("index").value_or(-1) == k)
      return c.address(u.get());
  if (k == 0) return c.address(&instr);
  return std::nullopt;
}

bool BatchNormOnExactKernel(const HloInstruction& bn) {
  const Opcode code = bn.opcode();
  if (code != Opcode::kBatchNormTraining && code != Opcode::kBatchNormInference &&
      code != Opcode::kBatchNormGrad)
    return false;
  if (bn.operand_count() == 0 || !TakesTypes(bn)) return false;
  const int64_t features = bn.operand(0)->shape().dims.back();
  return features > 0 && features <= kMaxFeatures && bn.operand(0)->shape().ElementCount() > 0;
}

std::string BatchNormKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (!BatchNormOnExactKernel(instr)) return "";
  const Opcode code = instr.opcode();
  const hlo::Shape& x = instr.operand(0)->shape();
  BatchNorm bn;
  bn.features = x.dims.back();
  bn.rows = x.ElementCount() / bn.features;
  bn.prologue = {std::string("vmovi ") + kInvRows + ", " + F32Immediate(1.0 / bn.rows),
                 std::string("vmovi ") + kEpsilon + ", " +
                     F32Immediate(instr.GetFloat("epsilon").value_or(0.0)),
                 "vmovi v26, 0.0"};
  bn.tag = instr.name(), bn.mxus = c.mxus;
  const bool grad = code == Opcode::kBatchNormGrad;
  const int x_bytes = MatrixBytes(x), dy_bytes = grad ? MatrixBytes(instr.operand(4)->shape()) : 4,
            out_bytes = MatrixBytes(ResultMatrix(instr));
  const uint64_t elements = static_cast<uint64_t>(bn.rows * bn.features);
  const uint64_t vector = static_cast<uint64_t>(bn.features) * 4;
  const bool flat = FlatBatchNorm::Takes(bn.rows, bn.features);
  FlatBatchNorm f(bn.rows, bn.features, instr.GetFloat("epsilon").value_or(0.0), instr.name());
  f.SetMatrixBytes(x_bytes, dy_bytes, out_bytes);
  std::vector<uint64_t> a;
  for (const HloInstruction* o : instr.operands()) a.push_back(c.address(o));
  if (code == Opcode::kBatchNormInference) {
    if (flat) bn.code = f.Inference(a[0], a[1], a[2], a[3], a[4], c.address(&instr));
    if (!flat) Inference(bn, instr, c, c.address(&instr));
    op.hbm_bytes = elements * (x_bytes + out_bytes) + 4 * vector;
  } else {
    std::optional<uint64_t> e0 = TupleElementAddress(instr, 0, c),
                            e1 = TupleElementAddress(instr, 1, c),
                            e2 = TupleElementAddress(instr, 2, c);
    // The tiled passes read the statistics back from HBM; the flat ones skip an unread one.
    if (!e0 || ((!e1 || !e2) && !flat)) return "";
    if (code == Opcode::kBatchNormTraining) {
      if (flat) bn.code = f.Training(a[0], a[1], a[2], *e0, e1, e2);
      if (!flat) Training(bn, instr, c, *e0, *e1, *e2);
      // x twice (flat) or three times, y once
      op.hbm_bytes = elements * ((flat ? 2 : 3) * x_bytes + out_bytes) + 8 * vector;
    } else {
      if (flat) bn.code = f.Grad(a[0], a[1], a[2], a[3], a[4], *e0, e1, e2);
      if (!flat) Grad(bn, instr, c, *e0, *e1, *e2);
      // dy and x twice (flat; tiled: dy three times), dx once
      op.hbm_bytes = elements * (2 * x_bytes + (flat ? 2 : 3) * dy_bytes + out_bytes) + 12 * vector;
    }
  }
  op.kind = KernelKind::kVpu;
  op.exact = true;
  return bn.code;
}

}  // namespace tpusim::lowering
