#include "compiler/lowering/reduce/feature_fusion_kernel.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lowering/buffers/tuple_results.h"
#include "compiler/lowering/reduce/batch_norm_flat.h"
#include "compiler/lowering/reduce/feature_stream.h"
#include "compiler/lowering/vpu/vpu_body.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using hlo::PrimitiveType;

constexpr int kMaxMatrices = 4;    // loaded into v0 .. v3 (FeatureStream)
constexpr int kFirstPattern = 24;  // vectors' patterns, then the scalars, to v29
constexpr int kLastConst = 29;     // v30, v31 accumulate (and v29 for a third sum)
constexpr int kFirstTemp = 6;      // v6 .. v23
constexpr size_t kMaxSums = 3;

// The fusion's parts: the sums (reduces inside it) and the leaves their values read.
struct Plan {
  std::vector<const HloInstruction*> sums;  // none: `map` is the root, stored per element
  const HloInstruction* map = nullptr;
  size_t map_index = 0;  // its place in a tuple root
  int result = 0;        // the map's register
  int64_t rows = 0, features = 0;
  std::vector<const HloInstruction*> matrices, vectors;           // fused parameters, in load order
  std::vector<std::pair<const HloInstruction*, double>> scalars;  // fused values, constant
  std::vector<std::string> prologue, body;
};

// The value of a scalar constant, or of a fused parameter standing for one.
std::optional<double> ScalarValue(const HloInstruction& fusion, const HloInstruction* v) {
  if (v->opcode() == Opcode::kParameter)
    v = fusion.operand(static_cast<size_t>(v->parameter_number()));
  if (v->opcode() != Opcode::kConstant || !v->shape().IsScalar()) return std::nullopt;
  const hlo::Literal& l = v->literal();
  if (!l.floats.empty()) return l.floats[0];
  if (!l.ints.empty()) return static_cast<double>(l.ints[0]);
  return std::nullopt;
}

// An add of the reducer's two f32 parameters.
bool IsF32Add(const hlo::HloComputation* r) {
  if (!r || r->root()->opcode() != Opcode::kAdd || r->parameters().size() != 2) return false;
  const HloInstruction* root = r->root();
  return root->shape().type == PrimitiveType::kF32 &&
         root->operand(0)->opcode() == Opcode::kParameter &&
         root->operand(1)->opcode() == Opcode::kParameter;
}

bool IsElementwise(const HloInstruction& i) {
  const hlo::OpCategory c = hlo::GetOpcodeInfo(i.opcode()).category;
  return c == hlo::OpCategory::kElementwiseUnary || c == hlo::OpCategory::kElementwiseBinary ||
         c == hlo::OpCategory::kElementwiseTernary;
}

std::string Immediate(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "f32:0x%08x", std::bit_cast<uint32_t>(static_cast<float>(v)));
  return text;
}

std::optional<Plan> Match(const HloInstruction& fusion) {
  const hlo::HloComputation* f =
      fusion.opcode() == Opcode::kFusion ? fusion.fused_computation() : nullptr;
  if (!f) return std::nullopt;
  Plan p;
  const HloInstruction* root = f->root();
  std::vector<int64_t> dims;
  if (root->opcode() == Opcode::kTuple) {
    // sums, and at most one value stored per element (a producer the sums read, fused with
    // them: multi-output-fusion's producer-consumer form)
    for (size_t k = 0; k < root->operand_count(); ++k) {
      const HloInstruction* o = root->operand(k);
      if (o->opcode() == Opcode::kReduce) {
        p.sums.push_back(o);
      } else if (!p.map && IsElementwise(*o) && o->shape().IsArray() &&
                 (o->shape().type == PrimitiveType::kF32 ||
                  o->shape().type == PrimitiveType::kBF16)) {
        p.map = o, p.map_index = k, dims = o->shape().dims;
      } else {
        return std::nullopt;
      }
    }
    if (p.sums.empty()) return std::nullopt;
  } else if (root->opcode() == Opcode::kReduce) {
    p.sums.push_back(root);
  } else if (root->shape().IsArray() && root->shape().rank() >= 2 &&
             (root->shape().type == PrimitiveType::kF32 ||
              root->shape().type == PrimitiveType::kBF16) &&
             IsElementwise(*root)) {
    p.map = root, dims = root->shape().dims;
  } else {
    return std::nullopt;
  }
  if (p.sums.size() > kMaxSums) return std::nullopt;
  for (const HloInstruction* r : p.sums) {
    if (r->opcode() != Opcode::kReduce || r->operand_count() != 2 || !IsF32Add(r->to_apply()) ||
        r->shape().type != PrimitiveType::kF32 || r->shape().rank() != 1)
      return std::nullopt;
    const hlo::Shape& x = r->operand(0)->shape();
    const hlo::IntList* reduced = r->dimensions();
    if (x.type != PrimitiveType::kF32 || x.rank() < 2 || !reduced ||
        static_cast<int64_t>(reduced->size()) != x.rank() - 1 || (!dims.empty() && dims != x.dims))
      return std::nullopt;
    for (int64_t d = 0; d + 1 < x.rank(); ++d)
      if ((*reduced)[static_cast<size_t>(d)] != d) return std::nullopt;
    if (ScalarValue(fusion, r->operand(1)) != 0.0) return std::nullopt;
    dims = x.dims;
  }
  p.features = dims.back();
  p.rows = hlo::Shape::Array(PrimitiveType::kF32, dims).ElementCount() / p.features;
  if (!FlatBatchNorm::Takes(p.rows, p.features)) return std::nullopt;
  // Leaves: matrices of the reduced shape, vectors broadcast along the last dimension,
  // scalar constants (outside the fusion) broadcast or used as they are.
  std::map<const HloInstruction*, int> bound;
  for (const HloInstruction* q : f->parameters()) {
    const hlo::Shape& s = q->shape();
    if (s.IsArray() && s.dims == dims &&
        (s.type == PrimitiveType::kF32 || s.type == PrimitiveType::kBF16)) {
      bound[q] = static_cast<int>(p.matrices.size());
      p.matrices.push_back(q);
    }
  }
  for (const auto& i : f->instructions()) {
    if (i->opcode() != Opcode::kBroadcast) continue;
    const HloInstruction* o = i->operand(0);
    if (o->opcode() == Opcode::kParameter && o->shape().rank() == 1 &&
        o->shape().type == PrimitiveType::kF32 && i->dimensions() &&
        *i->dimensions() == hlo::IntList{static_cast<int64_t>(dims.size()) - 1} &&
        i->shape().dims == dims) {
      // one register per distinct vector, however many broadcasts read it
      auto at = std::find(p.vectors.begin(), p.vectors.end(), o);
      bound[i.get()] = kFirstPattern + static_cast<int>(at - p.vectors.begin());
      if (at == p.vectors.end()) p.vectors.push_back(o);
    } else if (o->opcode() == Opcode::kParameter && o->shape().IsScalar()) {
      if (const std::optional<double> v = ScalarValue(fusion, o))
        p.scalars.emplace_back(i.get(), *v);
    }
  }
  for (const HloInstruction* q : f->parameters())
    if (q->shape().IsScalar())
      if (const std::optional<double> v = ScalarValue(fusion, q)) p.scalars.emplace_back(q, *v);
  // (a stream needs a matrix to read: a sum of broadcast constants has none)
  if (p.matrices.empty() || static_cast<int>(p.matrices.size()) > kMaxMatrices ||
      p.vectors.size() > 6)
    return std::nullopt;
  int next = kFirstPattern + static_cast<int>(p.vectors.size());
  // A map's stream keeps no accumulators: their registers hold constants too. A third sum
  // accumulates in v29 (FeatureStreamAccumulator).
  const int last_const = p.sums.empty()      ? FeatureStreamAccumulator(1)
                         : p.sums.size() > 2 ? kLastConst - 1
                                             : kLastConst;
  if (next - 1 > last_const) return std::nullopt;
  // One register per distinct constant (the sums' zero inits take none).
  std::map<std::string, int> held;
  for (const auto& [value, v] : p.scalars) {
    bool init = false;
    for (const HloInstruction* r : p.sums) init |= r->operand(1) == value;
    if (init) continue;
    const std::string imm = Immediate(v);
    if (!held.count(imm)) {
      if (next > last_const) return std::nullopt;
      p.prologue.push_back("vmovi v" + std::to_string(next) + ", " + imm);
      held[imm] = next++;
    }
    bound[value] = held[imm];
  }
  if (p.map) {
    ReducerBody b = BuildExpressionBody(bound, *p.map, kFirstTemp, next, last_const);
    if (!b.exact) return std::nullopt;
    p.prologue.insert(p.prologue.end(), b.prologue.begin(), b.prologue.end());
    // (a bf16 result is rounded by its convert in the body; the store keeps its bits)
    p.body = std::move(b.body), p.result = b.results.at(0);
    next += static_cast<int>(b.prologue.size());
    bound[p.map] = p.result;  // the sums read it from its register, kept below their temps
  }
  const int first_temp = p.map ? std::max(kFirstTemp, p.result + 1) : kFirstTemp;
  // Each sum's value, then its accumulation; a later value's constants follow the earlier's.
  for (size_t k = 0; k < p.sums.size(); ++k) {
    ReducerBody b =
        BuildExpressionBody(bound, *p.sums[k]->operand(0), first_temp, next, last_const);
    if (!b.exact) return std::nullopt;
    next += static_cast<int>(b.prologue.size());
    p.prologue.insert(p.prologue.end(), b.prologue.begin(), b.prologue.end());
    p.body.insert(p.body.end(), b.body.begin(), b.body.end());
    const std::string acc = "v" + std::to_string(FeatureStreamAccumulator(k));
    p.body.push_back("vadd " + acc + ", " + acc + ", v" + std::to_string(b.results.at(0)));
  }
  // Every parameter must be a leaf the kernel loads or knows.
  for (const HloInstruction* q : f->parameters()) {
    bool used = bound.count(q) > 0;
    for (const HloInstruction* v : p.vectors) used |= v == q;
    for (const HloInstruction* r : p.sums) used |= r->operand(1) == q;
    if (!used) return std::nullopt;
  }
  return p;
}

}  // namespace

bool FeatureFusionOnExactKernel(const HloInstruction& fusion) { return Match(fusion).has_value(); }

std::string FeatureFusionKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  std::optional<Plan> p = Match(instr);
  if (!p) return "";
  std::vector<std::optional<uint64_t>> results;
  const bool tuple = instr.shape().IsTuple();
  if (!tuple) {
    results = {c.address(&instr)};
  } else if (!TupleResultAddresses(instr, c, results)) {
    return "";
  }
  std::optional<uint64_t> output;  // the map's
  if (p->map) {
    output = results.at(tuple ? p->map_index : 0);
    if (!output) return "";
    if (tuple) results.erase(results.begin() + static_cast<std::ptrdiff_t>(p->map_index));
  }
  auto address = [&](const HloInstruction* param) {
    return c.address(instr.operand(static_cast<size_t>(param->parameter_number())));
  };
  std::vector<std::pair<uint64_t, int>> matrices;
  uint64_t bytes = 0;
  for (const HloInstruction* m : p->matrices) {
    const int b = m->shape().type == PrimitiveType::kBF16 ? 2 : 4;
    matrices.emplace_back(address(m), b);
    bytes += static_cast<uint64_t>(p->rows * p->features * b);
  }
  std::vector<uint64_t> vectors;
  for (const HloInstruction* v : p->vectors) vectors.push_back(address(v));
  FlatBatchNorm f(p->rows, p->features, 0.0, instr.name());
  const int out_bytes = p->map && p->map->shape().type == PrimitiveType::kBF16 ? 2 : 4;
  const std::string code = p->sums.empty() ? f.ColumnMap(matrices, vectors, p->prologue, p->body,
                                                         p->result, *output, out_bytes)
                                           : f.ColumnSums(matrices, vectors, p->prologue, p->body,
                                                          results, p->result, output, out_bytes);
  if (p->map) bytes += static_cast<uint64_t>(p->rows * p->features * out_bytes);
  op.kind = KernelKind::kVpu;
  op.vmem_bytes = FlatBatchNorm::VmemBytes();
  op.hbm_bytes = bytes + static_cast<uint64_t>(p->features * 4) * (vectors.size() + p->sums.size());
  op.exact = true;
  return code;
}

}  // namespace tpusim::lowering
