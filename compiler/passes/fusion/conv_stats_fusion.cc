// Convolution statistics fusion; see conv_stats_fusion.h.
#include "compiler/passes/fusion/conv_stats_fusion.h"

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/ir_edit.h"
#include "compiler/passes/layout.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;
using hlo::Shape;

bool IsOutputFusion(const HloInstruction& i) {
  return i.opcode() == Opcode::kFusion && i.fused_computation() &&
         i.GetWord("kind").value_or("") == "kOutput";
}

// The fusion's one batch-norm-training, when its x is a parameter and only
// get-tuple-elements read it; else null.
const HloInstruction* FusedTraining(const HloComputation& c) {
  const HloInstruction* found = nullptr;
  for (const auto& i : c.instructions()) {
    if (i->opcode() != Opcode::kBatchNormTraining) continue;
    if (found) return nullptr;
    found = i.get();
  }
  if (!found || found->operand_count() != 3 || found->operand(0)->opcode() != Opcode::kParameter ||
      !found->GetInt("feature_index"))
    return nullptr;
  for (const auto& i : c.instructions())
    for (const HloInstruction* o : i->operands())
      if (o == found && i->opcode() != Opcode::kGetTupleElement) return nullptr;
  return found;
}

// `s` with element type `t` and the TPU layout for it (same dimension order).
Shape Retyped(Shape s, hlo::PrimitiveType t) {
  s.type = t;
  if (s.layout) {
    s.layout->tiles.clear();
    s.layout = TpuLayout(s);
  }
  return s;
}

class Rewriter {
 public:
  Rewriter(hlo::HloModule& m, HloComputation& c, const target::TargetDescription& target,
           ModuleEdits& edits, HloComputation*& adder)
      : m_(m), c_(c), target_(target), edits_(edits), adder_(adder) {}

  bool Run() {
    const UserMap users = ComputeUsers(c_);
    bool changed = false;
    const size_t count = c_.instructions().size();  // rewriting appends
    for (size_t k = 0; k < count; ++k) {
      HloInstruction& f = *c_.instructions()[k];
      if (IsOutputFusion(f) && !edits_.remove.count(&f)) changed |= Try(f, f);
      if (f.opcode() == Opcode::kBatchNormTraining && &f != c_.root()) changed |= TryBare(f);
      if (f.opcode() == Opcode::kFusion && !edits_.remove.count(&f)) changed |= TrySums(f, users);
    }
    return changed;
  }

 private:
  HloInstruction* Scalar(HloComputation& c, double v) {
    HloInstruction* k =
        AddNew(c, "constant", Opcode::kConstant, Shape::Array(hlo::PrimitiveType::kF32, {}), {});
    k->mutable_literal().floats = {v};
    return k;
  }

  // f32 (a, b) -> a + b, one per module.
  HloComputation* Adder() {
    if (adder_) return adder_;
    adder_ = m_.AddComputation(
        std::make_unique<HloComputation>(UniqueComputationName(m_, "statistics_add")));
    const Shape scalar = Shape::Array(hlo::PrimitiveType::kF32, {});
    HloInstruction* a = AddNew(*adder_, "a", Opcode::kParameter, scalar, {});
    HloInstruction* b = AddNew(*adder_, "b", Opcode::kParameter, scalar, {});
    a->set_parameter_number(0), b->set_parameter_number(1);
    adder_->set_root(AddNew(*adder_, "sum", Opcode::kAdd, scalar, {a, b}));
    return adder_;
  }

  HloInstruction* Sum(HloComputation& c, HloInstruction* x, HloInstruction* zero,
                      const Shape& vector, int64_t feature, const char* name) {
    HloInstruction* r = AddNew(c, name, Opcode::kReduce, vector, {x, zero});
    hlo::IntList dims;
    for (int64_t d = 0; d < static_cast<int64_t>(x->shape().dims.size()); ++d)
      if (d != feature) dims.push_back(d);
    r->SetAttr("dimensions", dims);
    r->SetAttr("to_apply", hlo::ComputationRefs{{Adder()->name()}, {Adder()}, false});
    return r;
  }

  HloInstruction* Fusion(const Shape& shape, const std::vector<HloInstruction*>& operands,
                         HloComputation* fused) {
    HloInstruction* f = AddNew(c_, "fusion", Opcode::kFusion, shape, operands);
    f->SetAttr("kind", hlo::Word{"kOutput"});
    f->SetAttr("calls", hlo::ComputationRefs{{fused->name()}, {fused}, false});
    return f;
  }

  HloInstruction* Element(HloInstruction* tuple, int64_t k, const std::string& name) {
    HloInstruction* g =
        AddNew(c_, name, Opcode::kGetTupleElement, tuple->shape().tuple_shapes.at(k), {tuple});
    g->SetAttr("index", k);
    return g;
  }

  // fusion(x, w) -> tuple(conv, sum, sum of squares), the sums shaped as `vector`.
  HloInstruction* StatisticsFusion(HloInstruction& conv, const Shape& vector, int64_t feature) {
    HloComputation* fc = m_.AddComputation(std::make_unique<HloComputation>(
        UniqueComputationName(m_, "fused_convolution_statistics")));
    std::vector<HloInstruction*> params;
    for (size_t k = 0; k < conv.operand_count(); ++k) {
      params.push_back(AddNew(*fc, "param_" + std::to_string(k), Opcode::kParameter,
                              conv.operand(k)->shape(), {}));
      params.back()->set_parameter_number(static_cast<int64_t>(k));
    }
    HloInstruction* y = fc->AddInstruction(CloneWithOperands(conv, conv.name(), params));
    const Shape wide_shape = Retyped(conv.shape(), hlo::PrimitiveType::kF32);
    HloInstruction* wide = AddNew(*fc, "wide", Opcode::kConvert, wide_shape, {y});
    HloInstruction* zero = Scalar(*fc, 0.0);
    HloInstruction* sum = Sum(*fc, wide, zero, vector, feature, "sum");
    HloInstruction* square = AddNew(*fc, "square", Opcode::kMultiply, wide_shape, {wide, wide});
    HloInstruction* squares = Sum(*fc, square, zero, vector, feature, "sum_squares");
    const Shape shape = Shape::Tuple({conv.shape(), vector, vector});
    fc->set_root(AddNew(*fc, "tuple", Opcode::kTuple, shape, {y, sum, squares}));
    return Fusion(shape, conv.operands(), fc);
  }

  // A copy of `f`'s fused computation with its batch norm expanded from two more
  // parameters, the sums; the copy's fusion takes them as its last operands.
  HloInstruction* ExpandedFusion(HloInstruction& f, const HloInstruction& bn, HloInstruction* sum,
                                 HloInstruction* squares) {
    const HloComputation& old = *f.fused_computation();
    HloComputation* nc =
        m_.AddComputation(std::make_unique<HloComputation>(UniqueComputationName(m_, old.name())));
    std::unordered_map<const HloInstruction*, HloInstruction*> map;
    HloInstruction* parts[3] = {};
    const Shape& vector = bn.shape().tuple_shapes.at(1);
    const Shape& x = bn.operand(0)->shape();
    const int64_t feature = *bn.GetInt("feature_index");
    const double rows = static_cast<double>(x.ElementCount() / x.dims.at(feature));
    for (const auto& i : old.instructions()) {
      if (i.get() == &bn) {
        HloInstruction* s = AddNew(*nc, "sum", Opcode::kParameter, vector, {});
        HloInstruction* q = AddNew(*nc, "sum_squares", Opcode::kParameter, vector, {});
        s->set_parameter_number(static_cast<int64_t>(f.operand_count()));
        q->set_parameter_number(static_cast<int64_t>(f.operand_count()) + 1);
        auto spread = [&](double v) {
          HloInstruction* b =
              AddNew(*nc, "broadcast", Opcode::kBroadcast, vector, {Scalar(*nc, v)});
          b->SetAttr("dimensions", hlo::IntList{});
          return b;
        };
        auto op = [&](Opcode code, HloInstruction* a, HloInstruction* b, const char* name) {
          return AddNew(*nc, name, code, vector, {a, b});
        };
        HloInstruction* inv = spread(1.0 / rows);
        HloInstruction* mean = op(Opcode::kMultiply, s, inv, "mean");
        HloInstruction* spread_var =
            op(Opcode::kSubtract, op(Opcode::kMultiply, q, inv, "mean_square"),
               op(Opcode::kMultiply, mean, mean, "square_mean"), "spread");
        HloInstruction* var = op(Opcode::kMaximum, spread_var, spread(0.0), "var");
        HloInstruction* normalized = AddNew(
            *nc, "normalized", Opcode::kBatchNormInference, bn.shape().tuple_shapes.at(0),
            {map.at(bn.operand(0)), map.at(bn.operand(1)), map.at(bn.operand(2)), mean, var});
        normalized->SetAttr("epsilon", bn.GetFloat("epsilon").value_or(0.0));
        normalized->SetAttr("feature_index", feature);
        parts[0] = normalized, parts[1] = mean, parts[2] = var;
        continue;
      }
      if (i->opcode() == Opcode::kGetTupleElement && i->operand(0) == &bn) {
        map[i.get()] = parts[i->GetInt("index").value_or(0)];
        continue;
      }
      std::vector<HloInstruction*> ops;
      for (const HloInstruction* o : i->operands()) ops.push_back(map.at(o));
      map[i.get()] = nc->AddInstruction(CloneWithOperands(*i, i->name(), ops));
    }
    nc->set_root(map.at(old.root()));
    std::vector<HloInstruction*> operands = f.operands();
    operands.push_back(sum), operands.push_back(squares);
    return Fusion(f.shape(), operands, nc);
  }

  void Drop(std::initializer_list<HloInstruction*> instrs) {
    for (HloInstruction* i : instrs) {
      edits_.remove.insert(i);
      if (i->opcode() == Opcode::kFusion) edits_.remove_computations.insert(i->fused_computation());
    }
  }

  // A batch norm outside any fusion (ResNet's projection-shortcut batch norms, whose
  // normalized value another batch norm's fusion reads): wrapped in a fusion of its own,
  // tuple(normalized, mean, var), which then takes the sums like the others.
  bool TryBare(HloInstruction& bn) {
    if (bn.operand_count() != 3 || bn.shape().tuple_shapes.size() != 3) return false;
    const HloInstruction* conv = bn.operand(0);
    if (conv->opcode() != Opcode::kConvolution || claimed_.count(conv) ||
        conv->shape().type != hlo::PrimitiveType::kBF16)
      return false;
    HloComputation* wc = m_.AddComputation(
        std::make_unique<HloComputation>(UniqueComputationName(m_, "fused_batch_norm")));
    std::vector<HloInstruction*> params;
    for (size_t k = 0; k < 3; ++k) {
      params.push_back(AddNew(*wc, "param_" + std::to_string(k), Opcode::kParameter,
                              bn.operand(k)->shape(), {}));
      params.back()->set_parameter_number(static_cast<int64_t>(k));
    }
    HloInstruction* inner = wc->AddInstruction(CloneWithOperands(bn, bn.name(), params));
    std::vector<HloInstruction*> parts;
    for (int64_t k = 0; k < 3; ++k) {
      parts.push_back(AddNew(*wc, "element", Opcode::kGetTupleElement,
                             bn.shape().tuple_shapes[static_cast<size_t>(k)], {inner}));
      parts.back()->SetAttr("index", k);
    }
    wc->set_root(AddNew(*wc, "tuple", Opcode::kTuple, bn.shape(), parts));
    HloInstruction* wrapper = Fusion(bn.shape(), bn.operands(), wc);
    if (Try(*wrapper, bn)) {
      Drop({wrapper});
      return true;
    }
    Drop({wrapper});
    return false;
  }

  // `f`, a batch-norm fusion, takes the sums of its convolution; its rebuilt fusion replaces
  // `replaced` (f itself, or the batch norm a wrapper fusion stands for).
  bool Try(HloInstruction& f, HloInstruction& replaced) {
    const HloInstruction* bn = FusedTraining(*f.fused_computation());
    if (!bn) return false;
    HloInstruction* conv = f.operands().at(static_cast<size_t>(bn->operand(0)->parameter_number()));
    if (conv->opcode() != Opcode::kConvolution || claimed_.count(conv) ||
        conv->shape().type != hlo::PrimitiveType::kBF16 || conv->operand_count() != 2)
      return false;
    const int64_t feature = *bn->GetInt("feature_index");
    HloInstruction* stats = StatisticsFusion(*conv, bn->shape().tuple_shapes.at(1), feature);
    if (!target_.ExactConvolutionFusion(*stats)) {
      Drop({stats});
      return false;
    }
    HloInstruction* sum = Element(stats, 1, conv->name() + ".sum");
    HloInstruction* squares = Element(stats, 2, conv->name() + ".sum_squares");
    HloInstruction* expanded = ExpandedFusion(f, *bn, sum, squares);
    if (!target_.ExactBatchNormFusion(*expanded)) {
      Drop({expanded, sum, squares, stats});
      return false;
    }
    // The convolution's result keeps its name (buffers, reports).
    auto gte =
        std::make_unique<HloInstruction>(conv->name(), Opcode::kGetTupleElement, conv->shape());
    gte->AddOperand(stats);
    HloInstruction* y = c_.AddInstruction(std::move(gte));
    y->SetAttr("index", int64_t{0});
    edits_.replace[conv] = y, edits_.replace[&replaced] = expanded;
    Drop({conv, &replaced});
    claimed_.insert(conv);
    return true;
  }

  // `f`, tuple(sum(f32(p)), sum(f32(p) * f32(p))) over every dimension but the last of a
  // bf16 convolution's result p (the sums an expanded batch norm reads), read only through
  // get-tuple-elements: the convolution computes them as it drains.
  bool TrySums(HloInstruction& f, const UserMap& users) {
    const HloComputation* fc = f.fused_computation();
    if (!fc || fc->root()->opcode() != Opcode::kTuple || fc->root()->operand_count() != 2)
      return false;
    const HloInstruction* p = nullptr;
    auto wide = [&](const HloInstruction* v) {  // f32(p) of a parameter p, p the same in all
      if (v->opcode() != Opcode::kConvert || v->shape().type != hlo::PrimitiveType::kF32 ||
          v->operand(0)->opcode() != Opcode::kParameter || (p && p != v->operand(0)))
        return false;
      p = v->operand(0);
      return true;
    };
    for (int64_t k = 0; k < 2; ++k) {
      const HloInstruction* r = fc->root()->operand(static_cast<size_t>(k));
      if (r->opcode() != Opcode::kReduce || r->operand_count() != 2) return false;
      const HloInstruction* v = r->operand(0);
      const bool square =
          v->opcode() == Opcode::kMultiply && wide(v->operand(0)) && wide(v->operand(1));
      if (square != (k == 1) || (k == 0 && !wide(v))) return false;
      if (r->operand(1)->opcode() != Opcode::kParameter) return false;
      const HloInstruction* zero =
          f.operand(static_cast<size_t>(r->operand(1)->parameter_number()));
      if (zero->opcode() != Opcode::kConstant || zero->literal().floats != std::vector<double>{0.0})
        return false;
      const int64_t rank = v->shape().rank();
      hlo::IntList leading;
      for (int64_t d = 0; d + 1 < rank; ++d) leading.push_back(d);
      if (!r->dimensions() || *r->dimensions() != leading) return false;
    }
    HloInstruction* conv = f.operands().at(static_cast<size_t>(p->parameter_number()));
    if (conv->opcode() != Opcode::kConvolution || claimed_.count(conv) ||
        conv->shape().type != hlo::PrimitiveType::kBF16 || conv->operand_count() != 2)
      return false;
    auto it = users.find(&f);
    if (it == users.end()) return false;
    for (const HloInstruction* u : it->second)
      if (u->opcode() != Opcode::kGetTupleElement) return false;
    const int64_t feature = conv->shape().rank() - 1;
    HloInstruction* stats = StatisticsFusion(*conv, f.shape().tuple_shapes.at(0), feature);
    if (!target_.ExactConvolutionFusion(*stats)) {
      Drop({stats});
      return false;
    }
    for (HloInstruction* u : it->second) {  // the sums keep their names
      const int64_t k = u->GetInt("index").value_or(0);
      auto sum = std::make_unique<HloInstruction>(u->name(), Opcode::kGetTupleElement, u->shape());
      sum->AddOperand(stats);
      HloInstruction* g = c_.AddInstruction(std::move(sum));
      g->SetAttr("index", k + 1);
      edits_.replace[u] = g;
      edits_.remove.insert(u);
    }
    auto gte =
        std::make_unique<HloInstruction>(conv->name(), Opcode::kGetTupleElement, conv->shape());
    gte->AddOperand(stats);
    HloInstruction* y = c_.AddInstruction(std::move(gte));
    y->SetAttr("index", int64_t{0});
    edits_.replace[conv] = y;
    Drop({conv, &f});
    claimed_.insert(conv);
    return true;
  }

  hlo::HloModule& m_;
  HloComputation& c_;
  const target::TargetDescription& target_;
  ModuleEdits& edits_;
  HloComputation*& adder_;
  std::unordered_set<const HloInstruction*> claimed_;  // convolutions already fused
};

}  // namespace

hlo::Result<bool> ConvStatisticsFusionPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  HloComputation* adder = nullptr;
  bool changed = false;
  for (HloComputation* c : KernelComputations(module))
    changed |= Rewriter(module, *c, target_, edits, adder).Run();
  if (!changed && adder) edits.remove_computations.insert(adder);
  if (edits.empty()) return false;
  hlo::Status s = ApplyEdits(module, edits);
  if (!s.ok()) return s;
  return changed;
}

}  // namespace tpusim::passes
