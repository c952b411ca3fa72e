// Transposed dot; see transposed_dot.h.
#include "compiler/passes/transposed_dot.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::IntList;
using hlo::Opcode;

// Attributes a dot may carry and still be swapped (no precision config, which is per operand).
bool SwappableAttrs(const HloInstruction& dot) {
  for (const hlo::Attribute& a : dot.attributes())
    if (a.key != "lhs_contracting_dims" && a.key != "rhs_contracting_dims" &&
        a.key != "lhs_batch_dims" && a.key != "rhs_batch_dims" && a.key != "metadata" &&
        a.key != "frontend_attributes")
      return false;
  return true;
}

IntList ListOr(const HloInstruction& i, const char* key) {
  const IntList* l = i.GetIntList(key);
  return l ? *l : IntList{};
}

// Whether `perm` (a transpose of `dot`'s result) is batch dims kept, then the rhs free dims,
// then the lhs free dims: the result of dot(rhs, lhs).
bool SwapsFreeDims(const HloInstruction& dot, const IntList& perm) {
  const int64_t batch = static_cast<int64_t>(ListOr(dot, "lhs_batch_dims").size());
  const int64_t lhs_free = dot.operand(0)->shape().rank() - batch -
                           static_cast<int64_t>(ListOr(dot, "lhs_contracting_dims").size());
  const int64_t rank = dot.shape().rank();
  if (static_cast<int64_t>(perm.size()) != rank || lhs_free <= 0 || rank - batch - lhs_free <= 0)
    return false;
  IntList want(static_cast<size_t>(batch));
  std::iota(want.begin(), want.end(), 0);
  for (int64_t d = batch + lhs_free; d < rank; ++d) want.push_back(d);
  for (int64_t d = batch; d < batch + lhs_free; ++d) want.push_back(d);
  return perm == want;
}

// dot(rhs, lhs) of `dot`, shaped `shape` (the transpose's); its dimension lists swapped
// between the sides and written in XLA's order.
HloInstruction* Swapped(HloComputation& c, const HloInstruction& dot, const hlo::Shape& shape) {
  HloInstruction* s = AddNew(c, dot.name(), Opcode::kDot, shape, {dot.operand(1), dot.operand(0)});
  for (const char* key :
       {"lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims"}) {
    const std::string from = std::string(key[0] == 'l' ? "rhs" : "lhs") + (key + 3);
    if (const hlo::Attribute* a = dot.FindAttr(from)) s->SetAttr(key, a->value);
  }
  for (const hlo::Attribute& a : dot.attributes())
    if (a.key == "metadata" || a.key == "frontend_attributes") s->SetAttr(a.key, a.value);
  return s;
}

// No layout, or the row-major one: what a dot writes.
bool RowMajor(const hlo::Shape& s) {
  if (!s.layout) return true;
  const std::vector<int64_t>& m = s.layout->minor_to_major;
  for (size_t k = 0; k < m.size(); ++k)
    if (m[k] != static_cast<int64_t>(m.size() - 1 - k)) return false;
  return true;
}

}  // namespace

hlo::Result<bool> TransposedDotPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  for (HloComputation* c : KernelComputations(module)) {
    const UserMap users = ComputeUsers(*c);
    auto only_user = [&](const HloInstruction* x, const HloInstruction* u) {
      auto it = users.find(x);
      return x != c->root() && it != users.end() && it->second.size() == 1 && it->second[0] == u;
    };
    std::vector<HloInstruction*> transposes;
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kTranspose && i->dimensions() && i->shape().IsArray())
        transposes.push_back(i.get());
    for (HloInstruction* t : transposes) {
      HloInstruction* x = t->operand(0);
      HloInstruction* sum = nullptr;  // an all-reduce between the dot and the transpose
      if (x->opcode() == Opcode::kAllReduce && x->operand_count() == 1 && x->shape().IsArray() &&
          only_user(x, t)) {
        sum = x;
        x = x->operand(0);
      }
      if (x->opcode() != Opcode::kDot || !only_user(x, sum ? sum : t) || !SwappableAttrs(*x) ||
          !SwapsFreeDims(*x, *t->dimensions()) || !RowMajor(x->shape()))
        continue;
      // The transposed shape in the dot's row-major layout (JAX prints the transpose
      // column-major: XLA's bitcast of the dot's result; tpusim's buffers are row-major).
      hlo::Shape shape = hlo::Shape::Array(x->shape().type, t->shape().dims);
      shape.layout = x->shape().layout;
      HloInstruction* r = Swapped(*c, *x, shape);
      if (sum) {
        HloInstruction* s = AddNew(*c, sum->name(), Opcode::kAllReduce, shape, {r});
        s->mutable_attributes() = sum->attributes();
        edits.remove.insert(sum);
        r = s;
      }
      edits.replace[t] = r;
      edits.remove.insert(t);
      edits.remove.insert(x);
    }
  }
  if (edits.empty()) return false;
  hlo::Status s = ApplyEdits(module, edits);
  if (!s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
