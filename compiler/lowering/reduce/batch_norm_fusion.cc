#include "compiler/lowering/reduce/batch_norm_fusion.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "compiler/hlo/opcode.h"
#include "compiler/lowering/reduce/batch_norm_flat.h"
#include "compiler/lowering/reduce/batch_norm_kernel.h"
#include "compiler/lowering/vpu/vpu_body.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using hlo::PrimitiveType;

// Registers of the flat kernel's normalizing pass (batch_norm_flat.h, FlatEpilogue).
constexpr int kNormalized = 8, kExtraInput = 1, kFirstTemp = 9, kFirstConst = 27, kLastConst = 29;

bool Real(const hlo::Shape& s) {
  return s.IsArray() && (s.type == PrimitiveType::kF32 || s.type == PrimitiveType::kBF16);
}

// The same dimensions and layout (element types may differ).
bool SameArrangement(const hlo::Shape& a, const hlo::Shape& b) {
  return a.IsArray() && b.IsArray() && a.dims == b.dims && a.layout == b.layout;
}

// Walks the elementwise expression `root` (without recursion) down to `leaf` values (kept in
// `leaves`), scalar constants and their broadcasts, and parameters of x's shape and layout
// (kept in `params`, at most `max_params`); false on anything else.
bool MatchExpression(const HloInstruction* root, const hlo::Shape& x,
                     const std::function<bool(const HloInstruction*)>& is_leaf,
                     std::vector<const HloInstruction*>& leaves,
                     std::vector<const HloInstruction*>& params, size_t max_params) {
  std::vector<const HloInstruction*> stack = {root};
  std::map<const HloInstruction*, bool> seen;
  while (!stack.empty()) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (seen[i]) continue;
    seen[i] = true;
    if (is_leaf(i)) {
      leaves.push_back(i);
      continue;
    }
    if (i->opcode() == Opcode::kConstant) {
      if (!i->shape().IsScalar()) return false;
      continue;
    }
    if (i->opcode() == Opcode::kParameter) {
      if (!Real(i->shape()) || !SameArrangement(i->shape(), x)) return false;
      params.push_back(i);
      if (params.size() > max_params) return false;  // the streams have so many inputs
      continue;
    }
    if (i->opcode() == Opcode::kBroadcast) {
      if (i->operand(0)->opcode() != Opcode::kConstant || !i->operand(0)->shape().IsScalar())
        return false;
    } else {
      const hlo::OpCategory c = hlo::GetOpcodeInfo(i->opcode()).category;
      if (c != hlo::OpCategory::kElementwiseUnary && c != hlo::OpCategory::kElementwiseBinary &&
          c != hlo::OpCategory::kElementwiseTernary)
        return false;
    }
    if (!i->shape().IsArray() || i->shape().dims != x.dims) return false;
    if (!Real(i->shape()) && i->shape().type != PrimitiveType::kPred) return false;
    for (const HloInstruction* o : i->operands()) stack.push_back(o);
  }
  return Real(root->shape()) && SameArrangement(root->shape(), x);
}

struct Parts {
  // batch-norm-training, or (statistics from sums) batch-norm-inference
  const HloInstruction* bn = nullptr;
  // Statistics from sums (passes/fusion/conv_stats_fusion.h): the parameters holding the sums of x
  // and of its squares; mean and var are computed from them as FlatBatchNorm does.
  const HloInstruction* sum = nullptr;
  const HloInstruction* sum_squares = nullptr;
  const HloInstruction* epilogue = nullptr;       // element 0 of the root tuple
  const HloInstruction* extra = nullptr;          // the epilogue's matrix parameter, if any
  std::vector<const HloInstruction*> normalized;  // get-tuple-element(bn), index=0
};

bool IsElement(const HloInstruction* i, const HloInstruction* of, int64_t k) {
  return i->opcode() == Opcode::kGetTupleElement && i->operand(0) == of &&
         i->GetInt("index").value_or(-1) == k;
}

// Checks the epilogue: over the normalized value, and at most one more matrix.
bool MatchEpilogue(Parts& p) {
  std::vector<const HloInstruction*> params;
  if (!MatchExpression(
          p.epilogue, p.bn->operand(0)->shape(),
          [&](const HloInstruction* i) { return p.sum ? i == p.bn : IsElement(i, p.bn, 0); },
          p.normalized, params, 1))
    return false;
  p.extra = params.empty() ? nullptr : params.front();
  return !p.normalized.empty();
}

bool Is(const HloInstruction* i, Opcode op) { return i->opcode() == op && i->operand_count() == 2; }

// broadcast(constant c) of f32 with c == `value` as f32.
bool IsSpread(const HloInstruction* i, double value) {
  if (i->opcode() != Opcode::kBroadcast || i->operand(0)->opcode() != Opcode::kConstant)
    return false;
  const std::vector<double>& v = i->operand(0)->literal().floats;
  return v.size() == 1 && static_cast<float>(v[0]) == static_cast<float>(value);
}

// mean = sum * 1/N and var = max(squares * 1/N - mean * mean, 0) (what conv_stats_fusion.cc
// writes), N the rows; fills p.sum and p.sum_squares.
bool MatchStatisticsFromSums(const HloInstruction* mean, const HloInstruction* var, double rows,
                             Parts& p) {
  if (!Is(mean, Opcode::kMultiply) || !IsSpread(mean->operand(1), 1.0 / rows) ||
      mean->operand(0)->opcode() != Opcode::kParameter || !Is(var, Opcode::kMaximum) ||
      !IsSpread(var->operand(1), 0.0))
    return false;
  const HloInstruction* spread = var->operand(0);
  if (!Is(spread, Opcode::kSubtract)) return false;
  const HloInstruction *ex2 = spread->operand(0), *m2 = spread->operand(1);
  if (!Is(ex2, Opcode::kMultiply) || !IsSpread(ex2->operand(1), 1.0 / rows) ||
      ex2->operand(0)->opcode() != Opcode::kParameter || !Is(m2, Opcode::kMultiply) ||
      m2->operand(0) != mean || m2->operand(1) != mean)
    return false;
  p.sum = mean->operand(0), p.sum_squares = ex2->operand(0);
  return p.sum->shape().type == PrimitiveType::kF32 &&
         p.sum_squares->shape().type == PrimitiveType::kF32;
}

// The batch-norm-inference normalizing with the root's mean and var, if any.
const HloInstruction* InferenceFromSums(const hlo::HloComputation& f, Parts& p) {
  const HloInstruction *mean = f.root()->operand(1), *var = f.root()->operand(2);
  for (const auto& i : f.instructions()) {
    if (i->opcode() != Opcode::kBatchNormInference || i->operand_count() != 5 ||
        i->operand(3) != mean || i->operand(4) != var)
      continue;
    const hlo::Shape& x = i->operand(0)->shape();
    if (!x.IsArray() || x.dims.empty()) return nullptr;
    const double rows = static_cast<double>(x.ElementCount() / x.dims.back());
    return MatchStatisticsFromSums(mean, var, rows, p) ? i.get() : nullptr;
  }
  return nullptr;
}

std::optional<Parts> Match(const HloInstruction& fusion) {
  const hlo::HloComputation* f =
      fusion.opcode() == Opcode::kFusion ? fusion.fused_computation() : nullptr;
  if (!f || f->root()->opcode() != Opcode::kTuple || f->root()->operand_count() != 3) return {};
  const HloInstruction* root = f->root();
  Parts p;
  p.bn = root->operand(1)->operand_count() ? root->operand(1)->operand(0) : nullptr;
  const bool from_sums = p.bn && p.bn->opcode() != Opcode::kBatchNormTraining;
  if (from_sums) p.bn = InferenceFromSums(*f, p);
  if (!p.bn || (!from_sums &&
                (!IsElement(root->operand(1), p.bn, 1) || !IsElement(root->operand(2), p.bn, 2))))
    return {};
  if (from_sums && p.bn->GetInt("feature_index").value_or(-1) !=
                       static_cast<int64_t>(p.bn->operand(0)->shape().dims.size()) - 1)
    return {};
  for (size_t k = 0; k < 3; ++k)
    if (p.bn->operand(k)->opcode() != Opcode::kParameter) return {};
  if (!BatchNormOnExactKernel(*p.bn)) return {};
  const hlo::Shape& x = p.bn->operand(0)->shape();
  const int64_t features = x.dims.back();
  if (!FlatBatchNorm::Takes(x.ElementCount() / features, features)) return {};
  p.epilogue = root->operand(0);
  if (!MatchEpilogue(p)) return {};
  return p;
}

// The epilogue as VPU lines after the normalizing pass's own (FlatEpilogue). A bf16
// normalized value is rounded first, as the unfused program stored it.
std::optional<FlatEpilogue> Epilogue(const Parts& p) {
  FlatEpilogue e;
  std::map<const HloInstruction*, int> bound;
  int value = kNormalized;
  if (p.normalized.front()->shape().type == PrimitiveType::kBF16) {
    e.body.push_back("vcvt.bf16 v" + std::to_string(kFirstTemp) + ", v" +
                     std::to_string(kNormalized));
    value = kFirstTemp;
  }
  for (const HloInstruction* n : p.normalized) bound[n] = value;
  if (p.extra) bound[p.extra] = kExtraInput;
  ReducerBody b = BuildExpressionBody(bound, *p.epilogue, value + 1, kFirstConst, kLastConst);
  if (!b.exact) return std::nullopt;
  e.prologue = std::move(b.prologue);
  e.body.insert(e.body.end(), b.body.begin(), b.body.end());
  e.result = b.results.at(0);
  return e;
}

int MatrixBytes(const hlo::Shape& s) { return s.type == PrimitiveType::kBF16 ? 2 : 4; }

// batch-norm-grad whose dy (operand 4) is an elementwise expression over at most three
// matrices (ReLU's gradient select(y > 0, g, 0); at a residual junction select(y > 0, g1 + g2,
// 0)), its other operands parameters. The fusion's root is the batch norm, or (dy has other
// readers) tuple(dx, dgamma, dbeta, dy).
struct GradParts {
  const HloInstruction* bn = nullptr;
  std::vector<const HloInstruction*> matrices;  // the expression's parameters, in order
  bool stores_dy = false;
  // The training pass's normalize duplicated into dy's expression (passes/fusion/bn_fusion.h):
  // batch-norm-inference(x, gamma, beta, mean, var) of the batch norm's own operands and a
  // beta parameter, at most one.
  const HloInstruction* normalize = nullptr;
};

// `i` is batch-norm-inference of bn's x, gamma, mean and var (and an f32[features] beta
// parameter), with bn's feature index and epsilon: the kernel recomputes it from the x it
// streams, with the statistics pass's scale.
bool IsDuplicatedNormalize(const HloInstruction* i, const HloInstruction* bn) {
  if (i->opcode() != Opcode::kBatchNormInference || i->operand_count() != 5) return false;
  const HloInstruction* beta = i->operand(2);
  const hlo::Shape& x = bn->operand(0)->shape();
  const auto f32 = [](std::optional<double> v) { return static_cast<float>(v.value_or(-1.0)); };
  return i->operand(0) == bn->operand(0) && i->operand(1) == bn->operand(1) &&
         i->operand(3) == bn->operand(2) && i->operand(4) == bn->operand(3) &&
         beta->opcode() == Opcode::kParameter && beta->shape() == bn->operand(1)->shape() &&
         beta->shape().type == PrimitiveType::kF32 &&
         i->GetInt("feature_index") == bn->GetInt("feature_index") &&
         f32(i->GetFloat("epsilon")) == f32(bn->GetFloat("epsilon")) &&
         SameArrangement(i->shape(), x) && Real(i->shape());
}

constexpr size_t kMostDyMatrices = 3;  // the feature stream reads x and these: 4 inputs

std::optional<GradParts> MatchGrad(const HloInstruction& fusion) {
  const hlo::HloComputation* f =
      fusion.opcode() == Opcode::kFusion ? fusion.fused_computation() : nullptr;
  if (!f) return {};
  GradParts p;
  const HloInstruction* root = f->root();
  if (root->opcode() == Opcode::kTuple && root->operand_count() == 4) {
    for (int64_t k = 0; k < 3; ++k) {
      const HloInstruction* e = root->operand(static_cast<size_t>(k));
      if (e->opcode() != Opcode::kGetTupleElement || e->GetInt("index").value_or(-1) != k ||
          (p.bn && e->operand(0) != p.bn))
        return {};
      p.bn = e->operand(0);
    }
    if (p.bn->opcode() != Opcode::kBatchNormGrad || p.bn->operand_count() != 5 ||
        root->operand(3) != p.bn->operand(4))
      return {};
    p.stores_dy = true;
  } else if (root->opcode() == Opcode::kBatchNormGrad) {
    p.bn = root;
  } else {
    return {};
  }
  if (p.bn->operand_count() != 5) return {};
  for (size_t k = 0; k < 4; ++k)
    if (p.bn->operand(k)->opcode() != Opcode::kParameter) return {};
  if (p.bn->operand(4)->opcode() == Opcode::kParameter || !BatchNormOnExactKernel(*p.bn)) return {};
  const hlo::Shape& x = p.bn->operand(0)->shape();
  const int64_t features = x.dims.back();
  if (!FlatBatchNorm::Takes(x.ElementCount() / features, features)) return {};
  std::vector<const HloInstruction*> normalizes;
  if (!MatchExpression(
          p.bn->operand(4), x,
          [&](const HloInstruction* i) { return IsDuplicatedNormalize(i, p.bn); }, normalizes,
          p.matrices, kMostDyMatrices) ||
      p.matrices.empty() || normalizes.size() > 1)
    return {};
  if (!normalizes.empty()) p.normalize = normalizes.front();
  return p;
}

// The lines computing dy from the matrices in registers `regs` (in the order of
// p.matrices); empty without an exact VPU form. A duplicated normalize is computed first as
// the training pass computed it (FlatBatchNorm's normalizing pass: x - mean, times the scale,
// plus beta, rounded when bf16). A bf16 dy is rounded, as the unfused program stored it.
std::optional<FlatCode> DyCode(const GradParts& p, const FlatDyRegisters& regs) {
  std::map<const HloInstruction*, int> bound;
  for (size_t k = 0; k < p.matrices.size(); ++k) bound[p.matrices[k]] = regs.matrices.at(k);
  std::vector<std::string> head;
  int first_temp = regs.first_temp;
  if (p.normalize) {
    if (regs.scale < 0 || regs.beta < 0) return std::nullopt;
    const int t = first_temp;
    head = FlatNormalizeLines(regs.x, regs.mean, regs.scale, regs.beta, t);
    int value = t + 2;
    if (p.normalize->shape().type == PrimitiveType::kBF16)
      head.push_back("vcvt.bf16 v" + std::to_string(t + 3) + ", v" + std::to_string(t + 2)),
          value = t + 3;
    bound[p.normalize] = value;
    first_temp = value + 1;
  }
  const HloInstruction& dy = *p.bn->operand(4);
  const bool round = dy.shape().type == PrimitiveType::kBF16;
  ReducerBody r = BuildExpressionBody(bound, dy, first_temp, regs.first_const, regs.last_const);
  if (!r.exact || r.results.at(0) >= 24) return std::nullopt;
  r.body.insert(r.body.begin(), head.begin(), head.end());
  FlatCode code{std::move(r.prologue), std::move(r.body), r.results.at(0)};
  if (round) {
    // A temp past the result (every other temp is dead by now), never an input register.
    const int t = std::max(code.result + 1, first_temp);
    if (t > 23) return std::nullopt;
    code.body.push_back("vcvt.bf16 v" + std::to_string(t) + ", v" + std::to_string(code.result));
    code.result = t;
  }
  return code;
}

// The grad kernel with dy computed (FlatDyProducer), or empty.
std::string GradFusionKernel(const HloInstruction& fusion, const GradParts& p, const OpContext& c,
                             LoweredOp& op) {
  const std::optional<uint64_t> dx = TupleElementAddress(fusion, 0, c),
                                dgamma = TupleElementAddress(fusion, 1, c),
                                dbeta = TupleElementAddress(fusion, 2, c);
  if (!dx) return "";  // an unread dgamma or dbeta is not stored
  auto address = [&](const HloInstruction* param) {
    return c.address(fusion.operand(static_cast<size_t>(param->parameter_number())));
  };
  FlatDyProducer producer;
  uint64_t matrix_bytes = 0;  // per element, over the dy expression's matrices
  for (const HloInstruction* m : p.matrices) {
    producer.matrices.push_back({address(m), MatrixBytes(m->shape())});
    matrix_bytes += static_cast<uint64_t>(MatrixBytes(m->shape()));
  }
  if (p.stores_dy) {
    producer.store = TupleElementAddress(fusion, 3, c);
    if (!producer.store) return "";
  }
  if (p.normalize) producer.beta = address(p.normalize->operand(2));
  bool exact = true;
  producer.build = [&](const FlatDyRegisters& regs) {
    std::optional<FlatCode> code = DyCode(p, regs);
    exact = exact && code.has_value();
    return code.value_or(FlatCode{});
  };
  const hlo::Shape& x = p.bn->operand(0)->shape();
  const int64_t features = x.dims.back(), rows = x.ElementCount() / features;
  const int x_bytes = MatrixBytes(x), out_bytes = MatrixBytes(fusion.shape().tuple_shapes.at(0));
  const int dy_bytes = MatrixBytes(p.bn->operand(4)->shape());
  FlatBatchNorm f(rows, features, p.bn->GetFloat("epsilon").value_or(0.0), fusion.name());
  f.SetMatrixBytes(x_bytes, dy_bytes, out_bytes);
  const std::string code =
      f.Grad(address(p.bn->operand(0)), address(p.bn->operand(1)), address(p.bn->operand(2)),
             address(p.bn->operand(3)), 0, *dx, dgamma, dbeta, &producer);
  if (!exact) return "";
  const uint64_t elements = static_cast<uint64_t>(rows * features);
  // The sums pass reads x and dy's matrices (and writes dy when it has other readers); the dx
  // pass reads x and the matrices again, or dy, and writes dx.
  const uint64_t per_element =
      p.stores_dy ? x_bytes + matrix_bytes + dy_bytes + x_bytes + dy_bytes + out_bytes
                  : 2 * (x_bytes + matrix_bytes) + out_bytes;
  op.hbm_bytes = elements * per_element + 12 * static_cast<uint64_t>(features) * 4;
  op.kind = KernelKind::kVpu;
  op.vmem_bytes = FlatBatchNorm::VmemBytes();
  op.exact = true;
  return code;
}

}  // namespace

bool BatchNormFusionOnExactKernel(const HloInstruction& fusion) {
  if (const std::optional<GradParts> g = MatchGrad(fusion)) {  // both passes' registers
    for (const bool dx_pass : {false, true}) {
      // a stored dy is read back by the dx pass, which then computes no producer
      if (dx_pass && g->stores_dy) continue;
      const FlatDyRegisters regs =
          FlatDyPassRegisters(g->matrices.size(), g->normalize != nullptr, dx_pass);
      if (!DyCode(*g, regs)) return false;
    }
    return true;
  }
  const std::optional<Parts> p = Match(fusion);
  return p && Epilogue(*p).has_value();
}

std::string BatchNormFusionKernel(const HloInstruction& fusion, const OpContext& c, LoweredOp& op) {
  if (const std::optional<GradParts> g = MatchGrad(fusion))
    return GradFusionKernel(fusion, *g, c, op);
  const std::optional<Parts> p = Match(fusion);
  if (!p) return "";
  std::optional<FlatEpilogue> e = Epilogue(*p);
  const std::optional<uint64_t> y = TupleElementAddress(fusion, 0, c),
                                mean = TupleElementAddress(fusion, 1, c),
                                var = TupleElementAddress(fusion, 2, c);
  if (!e || !y) return "";
  // A fused parameter stands for the fusion's operand of the same number.
  auto address = [&](const HloInstruction* param) {
    return c.address(fusion.operand(static_cast<size_t>(param->parameter_number())));
  };
  const hlo::Shape& x = p->bn->operand(0)->shape();
  const int64_t features = x.dims.back(), rows = x.ElementCount() / features;
  const int x_bytes = MatrixBytes(x), out_bytes = MatrixBytes(p->epilogue->shape());
  if (p->extra) e->extra = address(p->extra), e->extra_bytes = MatrixBytes(p->extra->shape());
  FlatBatchNorm f(rows, features, p->bn->GetFloat("epsilon").value_or(0.0), fusion.name());
  f.SetMatrixBytes(x_bytes, 4, out_bytes);
  const uint64_t in = address(p->bn->operand(0)), gamma = address(p->bn->operand(1)),
                 beta = address(p->bn->operand(2));
  const std::string code = p->sum ? f.TrainingFromSums(in, gamma, beta, address(p->sum),
                                                       address(p->sum_squares), *y, mean, var, &*e)
                                  : f.Training(in, gamma, beta, *y, mean, var, &*e);
  const uint64_t elements = static_cast<uint64_t>(rows * features);
  // x twice (the sums, then the normalizing pass; once given the sums), the epilogue's matrix
  // once, the result once
  op.hbm_bytes = elements * ((p->sum ? 1 : 2) * x_bytes + e->extra_bytes + out_bytes) +
                 (p->sum ? 10 : 8) * static_cast<uint64_t>(features) * 4;
  op.kind = KernelKind::kVpu;
  op.vmem_bytes = FlatBatchNorm::VmemBytes();
  op.exact = true;
  return code;
}

}  // namespace tpusim::lowering
