// Rematerialization over a node model of the entry computation; see rematerialization.h.
#include "compiler/passes/rematerialization.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "compiler/passes/ir_edit.h"
#include "compiler/passes/layout.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::OpCategory;
using hlo::Opcode;

// Ops a vector unit or a DMA engine runs in one pass over their bytes, with no side effect.
bool CheapOp(const HloInstruction& i) {
  switch (hlo::GetOpcodeInfo(i.opcode()).category) {
    case OpCategory::kElementwiseUnary:
    case OpCategory::kElementwiseBinary:
    case OpCategory::kElementwiseTernary:
      return i.called_computations().empty();
    default:
      break;
  }
  switch (i.opcode()) {
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kReverse:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kCopy:
      return true;
    default:
      return false;
  }
}

// Whether `i` may run again later: a cheap op, or a loop fusion of cheap ops, with an array
// result of its own.
bool Recomputable(const HloInstruction& i) {
  if (i.shape().IsTuple() || LivesInOperandBuffers(i)) return false;
  if (i.opcode() != Opcode::kFusion) return CheapOp(i);
  if (i.GetWord("kind").value_or("") != "kLoop" || !i.fused_computation()) return false;
  for (const auto& f : i.fused_computation()->instructions())
    if (f->opcode() != Opcode::kParameter && f->opcode() != Opcode::kConstant && !CheapOp(*f))
      return false;
  return true;
}

// The entry as nodes in program order: its instructions, then the recomputations chosen so
// far, which Materialize adds to the computation.
class Planner {
 public:
  explicit Planner(HloComputation& c) {
    std::unordered_map<const HloInstruction*, size_t> id;
    for (const auto& i : c.instructions()) {
      id[i.get()] = nodes_.size();
      order_.push_back(nodes_.size());
      nodes_.push_back({i.get(), {}, false, PaddedBytes(i->shape())});
    }
    for (Node& n : nodes_)
      for (const HloInstruction* o : n.instr->operands()) n.operands.push_back(id.at(o));
    root_ = id.at(c.root());
  }

  // Recomputes values until no point has more than `target` bytes live; false (and nothing to
  // materialize) when some point cannot be brought under it.
  bool Fit(int64_t target) {
    const size_t limit = 2 * nodes_.size() + 16;  // far above what terminates (see Choose)
    for (size_t round = 0;; ++round) {
      Analyze();
      size_t p = 0;
      while (p < order_.size() && live_[p] <= target) ++p;
      if (p == order_.size()) return true;
      if (round == limit || !Choose(p)) return false;
    }
  }

  // Adds the chosen recomputations to `c` (fused bodies copied into `m`), rewires the readers
  // after them and puts the computation in the planned order.
  std::vector<Recomputation> Materialize(hlo::HloModule& m, HloComputation& c) {
    std::vector<HloInstruction*> order;
    for (size_t id : order_) {
      Node& n = nodes_[id];
      std::vector<HloInstruction*> ops;
      for (size_t o : n.operands) ops.push_back(nodes_[o].instr);
      if (n.clone) {
        n.instr = c.AddInstruction(Copy(m, c, *n.instr, ops));
      } else {
        for (size_t k = 0; k < ops.size(); ++k)
          if (n.instr->operand(k) != ops[k]) n.instr->ReplaceOperand(k, ops[k]);
      }
      order.push_back(n.instr);
    }
    c.Reorder(order);
    for (Recomputation& r : chosen_) r.clone = nodes_[clone_of_[&r - chosen_.data()]].instr->name();
    return chosen_;
  }

 private:
  struct Node {
    HloInstruction* instr;  // a clone: the instruction it recomputes until materialized
    std::vector<size_t> operands;
    bool clone;
    int64_t bytes;  // padded bytes of its result
  };

  // Positions, buffer owners (through aliases), readers, last reads and the live bytes at
  // each position, over the current order.
  void Analyze() {
    const size_t n = order_.size(), count = nodes_.size();
    pos_.assign(count, 0), end_.assign(count, 0);
    owners_.assign(count, {}), users_.assign(count, {});
    for (size_t k = 0; k < n; ++k) {
      const size_t id = order_[k];
      const Node& node = nodes_[id];
      pos_[id] = k;
      for (size_t o : node.operands) users_[o].push_back(id);
      if (LivesInOperandBuffers(*node.instr)) {
        for (size_t o : node.operands)
          owners_[id].insert(owners_[id].end(), owners_[o].begin(), owners_[o].end());
        continue;
      }
      owners_[id] = {id};
      end_[id] = IsParameter(id) ? n - 1 : k;
      for (size_t o : node.operands)
        for (size_t b : owners_[o]) end_[b] = std::max(end_[b], k);
    }
    for (size_t b : owners_[root_]) end_[b] = n - 1;
    std::vector<int64_t> delta(n + 1, 0);
    for (size_t id : order_) {
      if (LivesInOperandBuffers(*nodes_[id].instr)) continue;
      delta[IsParameter(id) ? 0 : pos_[id]] += nodes_[id].bytes;
      delta[end_[id] + 1] -= nodes_[id].bytes;
    }
    live_.assign(n, 0);
    int64_t live = 0;
    for (size_t k = 0; k < n; ++k) live_[k] = live += delta[k];
  }

  bool IsParameter(size_t id) const { return nodes_[id].instr->opcode() == Opcode::kParameter; }

  // Recomputes one value live across position p, later, if one qualifies: defined before p,
  // not read at p, read after p only by instructions (no alias carries it on), recomputable,
  // its operands' buffers live at p. Those conditions leave every position up to p with no
  // more bytes live and p with fewer, so Fit's first crowded position only moves forward.
  bool Choose(size_t p) {
    std::unordered_set<size_t> read_at_p;
    for (size_t o : nodes_[order_[p]].operands)
      for (size_t b : owners_[o]) read_at_p.insert(b);
    std::unordered_set<size_t> kept(owners_[root_].begin(), owners_[root_].end());
    size_t best = nodes_.size(), best_at = 0;
    double best_cost = 0;
    for (size_t k = 0; k < p; ++k) {
      const size_t b = order_[k];
      const Node& node = nodes_[b];
      if (end_[b] <= p || read_at_p.count(b) || kept.count(b) || node.bytes == 0 ||
          !Recomputable(*node.instr))
        continue;
      size_t at = order_.size();  // the first reader after p
      bool ok = true;
      for (size_t u : users_[b]) {
        ok = ok && !LivesInOperandBuffers(*nodes_[u].instr);
        if (pos_[u] > p) at = std::min(at, pos_[u]);
      }
      int64_t moved = node.bytes;  // bytes read and written to recompute it
      std::unordered_set<size_t> operand_buffers;
      for (size_t o : node.operands)
        for (size_t ob : owners_[o]) operand_buffers.insert(ob);
      for (size_t ob : operand_buffers) {
        ok = ok && end_[ob] >= p;
        moved += nodes_[ob].bytes;
      }
      if (!ok || at == order_.size()) continue;
      // XLA's cost per byte of memory reduced; ties to the larger buffer, then the earlier.
      const double cost = static_cast<double>(moved) / static_cast<double>(node.bytes);
      if (best == nodes_.size() || cost < best_cost ||
          (cost == best_cost && node.bytes > nodes_[best].bytes))
        best = b, best_at = at, best_cost = cost;
    }
    if (best == nodes_.size()) return false;
    const size_t clone = nodes_.size();
    nodes_.push_back({nodes_[best].instr, nodes_[best].operands, true, nodes_[best].bytes});
    for (size_t u : users_[best])
      if (pos_[u] >= best_at)
        for (size_t& o : nodes_[u].operands) o = o == best ? clone : o;
    chosen_.push_back({nodes_[best].instr->name(), "", nodes_[order_[best_at]].instr->name(),
                       nodes_[best].bytes});
    clone_of_.push_back(clone);
    order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(best_at), clone);
    return true;
  }

  // A copy of `i` named `<i>.remat` over `ops`; a fusion gets a copy of its fused body.
  static std::unique_ptr<HloInstruction> Copy(hlo::HloModule& m, HloComputation& c,
                                              const HloInstruction& i,
                                              const std::vector<HloInstruction*>& ops) {
    auto copy = CloneWithOperands(i, UniqueName(c, i.name() + ".remat"), ops);
    if (i.opcode() != Opcode::kFusion) return copy;
    const HloComputation& body = *i.fused_computation();
    auto fused = std::make_unique<HloComputation>(UniqueComputationName(m, body.name() + ".remat"));
    std::unordered_map<const HloInstruction*, HloInstruction*> params;
    for (HloInstruction* q : body.parameters())
      params[q] = fused->AddInstruction(CloneWithOperands(*q, q->name(), {}));
    fused->set_root(
        CloneBody(body, *fused, [&](const HloInstruction& q) { return params.at(&q); }));
    copy->SetAttr("calls", hlo::ComputationRefs{{fused->name()}, {fused.get()}, false});
    m.AddComputation(std::move(fused));
    return copy;
  }

  std::vector<Node> nodes_;
  std::vector<size_t> order_;  // node ids in program order
  size_t root_ = 0;
  std::vector<size_t> pos_, end_;
  std::vector<std::vector<size_t>> owners_, users_;
  std::vector<int64_t> live_;
  std::vector<Recomputation> chosen_;
  std::vector<size_t> clone_of_;  // the clone node of each chosen recomputation
};

}  // namespace

hlo::Result<bool> RematerializationPass::Run(hlo::HloModule& module) {
  recomputed_.clear();
  before_ = after_ = 0;
  HloComputation* entry = module.entry();
  if (!entry) return false;
  // Every buffer at once fits: no plan can exceed the capacity (and none is computed).
  int64_t total = 0;
  for (const auto& i : entry->instructions())
    if (!LivesInOperandBuffers(*i) && (total += PaddedBytes(i->shape())) > capacity_) break;
  if (total <= capacity_) return false;
  before_ = after_ = PlanMemory(module).peak_bytes;
  // The plan's offsets can need more than the largest sum of live buffers (fragmentation):
  // each round aims that much lower.
  int64_t target = capacity_;
  for (int round = 0; round < 4 && after_ > capacity_; ++round) {
    Planner planner(*entry);
    if (!planner.Fit(target)) break;
    std::vector<Recomputation> done = planner.Materialize(module, *entry);
    recomputed_.insert(recomputed_.end(), done.begin(), done.end());
    const int64_t peak = PlanMemory(module).peak_bytes;
    target -= std::max<int64_t>(peak - capacity_, 1);
    after_ = peak;
  }
  return !recomputed_.empty();
}

}  // namespace tpusim::passes
