#include "compiler/lowering/control/loop_state.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "compiler/hlo/opcode.h"
#include "compiler/lowering/buffers/value_buffers.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// The state elements a body value may be: the parameter itself (`whole`: every element) or
// some of its elements, through get-tuple-element, tuples, bitcasts and reshapes.
struct StateAlias {
  bool whole = false;
  std::set<int64_t> elements;
};

bool IsAlias(const HloInstruction& i) {
  return i.opcode() == Opcode::kGetTupleElement || i.opcode() == Opcode::kTuple ||
         i.opcode() == Opcode::kBitcast || i.opcode() == Opcode::kReshape;
}

bool Elementwise(const HloInstruction& i) {
  const hlo::OpCategory c = hlo::GetOpcodeInfo(i.opcode()).category;
  return c == hlo::OpCategory::kElementwiseUnary || c == hlo::OpCategory::kElementwiseBinary ||
         c == hlo::OpCategory::kElementwiseTernary;
}

// Element j of the result reads only element j of each operand of its shape: an elementwise
// op, or a loop fusion of elementwise ops, constants and scalars broadcast.
bool WorksElementwise(const HloInstruction& i) {
  if (Elementwise(i)) return true;
  if (i.opcode() != Opcode::kFusion || !i.fused_computation()) return false;
  const auto& fused = i.fused_computation()->instructions();
  return std::all_of(fused.begin(), fused.end(), [](const auto& f) {
    return Elementwise(*f) || f->opcode() == Opcode::kParameter ||
           f->opcode() == Opcode::kConstant ||
           (f->opcode() == Opcode::kBroadcast && f->operand(0)->shape().dims.empty());
  });
}

class BodyAnalysis {
 public:
  explicit BodyAnalysis(const hlo::HloComputation& body) : body_(body) {
    const HloInstruction* param = body.parameters().empty() ? nullptr : body.parameters()[0];
    elements_ = param && param->shape().IsTuple()
                    ? static_cast<int64_t>(param->shape().tuple_shapes.size())
                    : 1;
    last_read_.assign(static_cast<size_t>(elements_), -1);
    const auto& instrs = body.instructions();
    for (size_t t = 0; t < instrs.size(); ++t) {
      const HloInstruction& i = *instrs[t];
      position_[&i] = static_cast<int64_t>(t);
      alias_[&i] = AliasOf(i);
      if (IsAlias(i) || i.opcode() == Opcode::kParameter) continue;  // no code reads
      for (const HloInstruction* o : i.operands()) Read(alias_[o], static_cast<int64_t>(t));
    }
    const HloInstruction* root = body.root();
    if (!root || !IsAlias(*root)) return;
    constexpr int64_t kAfterTheBody = std::numeric_limits<int64_t>::max();
    if (root->opcode() != Opcode::kTuple) {
      Read(alias_[root], kAfterTheBody);
      return;
    }
    for (size_t k = 0; k < root->operand_count(); ++k) {
      const StateAlias& a = alias_[root->operand(k)];
      const bool unchanged = !a.whole && a.elements == std::set<int64_t>{static_cast<int64_t>(k)};
      if (!unchanged) Read(a, kAfterTheBody);  // copied into the state after the body
    }
  }

  RootElement Element(int64_t k) const {
    const HloInstruction* root = body_.root();
    RootElement r;
    const bool tuple = root->opcode() == Opcode::kTuple;
    if (tuple && k >= static_cast<int64_t>(root->operand_count())) return r;
    const HloInstruction* v = tuple ? root->operand(static_cast<size_t>(k)) : root;
    int64_t e = tuple ? 0 : k;
    for (;;) {
      if (v->opcode() == Opcode::kBitcast || v->opcode() == Opcode::kReshape) {
        v = v->operand(0);
      } else if (v->opcode() == Opcode::kGetTupleElement) {
        e = v->GetInt("index").value_or(0);
        v = v->operand(0);
      } else if (v->opcode() == Opcode::kTuple && e < static_cast<int64_t>(v->operand_count())) {
        v = v->operand(static_cast<size_t>(std::exchange(e, 0)));
      } else {
        break;
      }
    }
    r.value = v, r.value_element = e;
    if (v->opcode() == Opcode::kParameter && v->parent() == &body_) {
      r.state_element = e;
      return r;
    }
    r.in_place = InPlace(*v, e, k);
    return r;
  }

 private:
  StateAlias AliasOf(const HloInstruction& i) {
    StateAlias a;
    switch (i.opcode()) {
      case Opcode::kParameter:
        a.whole = true;
        break;
      case Opcode::kGetTupleElement: {
        const HloInstruction* of = i.operand(0);
        const int64_t k = i.GetInt("index").value_or(0);
        if (of->opcode() == Opcode::kTuple && k < static_cast<int64_t>(of->operand_count()))
          a = alias_[of->operand(static_cast<size_t>(k))];
        else if (alias_[of].whole)
          a.elements = {k};
        else
          a = alias_[of];
        break;
      }
      case Opcode::kTuple:
      case Opcode::kBitcast:
      case Opcode::kReshape:
        for (const HloInstruction* o : i.operands()) {
          const StateAlias& b = alias_[o];
          a.whole = a.whole || b.whole;
          a.elements.insert(b.elements.begin(), b.elements.end());
        }
        break;
      default:
        break;
    }
    return a;
  }

  void Read(const StateAlias& a, int64_t t) {
    for (int64_t k = 0; k < elements_; ++k)
      if (a.whole || a.elements.count(k))
        last_read_[static_cast<size_t>(k)] = std::max(last_read_[static_cast<size_t>(k)], t);
  }

  // `v` (element `e`) may be computed into state element k: no op at or after it reads that
  // element, except `v` itself when it works element by element on operands of its shape or
  // updates that element (dynamic-update-slice, scatter).
  bool InPlace(const HloInstruction& v, int64_t e, int64_t k) const {
    if (v.parent() != &body_ || v.opcode() == Opcode::kConstant || IsAlias(v) || k >= elements_ ||
        !ElementShape(v.shape(), e).IsArray())
      return false;
    const int64_t p = position_.at(&v), read = last_read_[static_cast<size_t>(k)];
    if (read < p) return true;
    if (read > p) return false;
    const auto reads_k = [&](const HloInstruction* o) {
      const StateAlias& a = alias_.at(o);
      return a.whole || a.elements.count(k) > 0;
    };
    if (v.opcode() == Opcode::kDynamicUpdateSlice || v.opcode() == Opcode::kScatter) {
      // Updates its operand 0 where it lies when that is the result's buffer (XLA's in-place
      // loop update): only operand 0 may be state element k.
      const StateAlias& target = alias_.at(v.operand(0));
      return !target.whole && target.elements == std::set<int64_t>{k} &&
             std::none_of(v.operands().begin() + 1, v.operands().end(), reads_k);
    }
    if (!WorksElementwise(v)) return false;
    return std::all_of(v.operands().begin(), v.operands().end(), [&](const HloInstruction* o) {
      return !reads_k(o) || o->shape().dims == v.shape().dims;
    });
  }

  const hlo::HloComputation& body_;
  int64_t elements_ = 1;
  std::vector<int64_t> last_read_;  // per state element: position of the last op reading it
  std::map<const HloInstruction*, int64_t> position_;
  std::map<const HloInstruction*, StateAlias> alias_;
};

}  // namespace

std::vector<RootElement> BodyRootElements(const hlo::HloComputation& body) {
  std::vector<RootElement> out;
  if (!body.root() || body.parameters().empty()) return out;
  const BodyAnalysis a(body);
  const hlo::Shape& state = body.parameters()[0]->shape();
  const int64_t n = state.IsTuple() ? static_cast<int64_t>(state.tuple_shapes.size()) : 1;
  for (int64_t k = 0; k < n; ++k) out.push_back(a.Element(k));
  return out;
}

}  // namespace tpusim::lowering
