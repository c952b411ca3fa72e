#include "compiler/lowering/lower.h"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "compiler/lowering/asm_util.h"
#include "compiler/lowering/branch_dispatch.h"
#include "compiler/lowering/collective_kernels.h"
#include "compiler/lowering/data_parallel.h"
#include "compiler/lowering/op_kernels.h"
#include "compiler/passes/layout.h"

namespace tpusim::lowering {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

constexpr uint64_t kScratchAlign = 1 << 20;
constexpr uint64_t kBranchBufferAlign = 4096;

uint64_t AlignUp(uint64_t bytes, uint64_t align) { return (bytes + align - 1) / align * align; }

const hlo::Shape& ElementShape(const hlo::Shape& s, int64_t element) {
  return s.IsTuple() && element < static_cast<int64_t>(s.tuple_shapes.size())
             ? s.tuple_shapes[static_cast<size_t>(element)]
             : s;
}

// Ops whose result is another value's buffer or has no data in HBM (constants are inlined
// into the kernels that read them).
bool DefinesNoBuffer(const HloInstruction& i) {
  switch (i.opcode()) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
    case Opcode::kReshape:
      return true;
    default:
      return false;
  }
}

// The trip count of a while loop: XLA's known_trip_count, or the `i < N` pattern with i
// starting at a constant.
std::optional<int64_t> TripCount(const HloInstruction& w) {
  if (const std::string* cfg = w.RawAttr("backend_config")) {
    std::smatch m;
    static const std::regex kKnown("\"known_trip_count\"\\s*:\\s*\\{\\s*\"n\"\\s*:\\s*\"(\\d+)\"");
    if (std::regex_search(*cfg, m, kKnown)) return std::stoll(m[1]);
  }
  const HloInstruction* cmp = w.condition() ? w.condition()->root() : nullptr;
  if (!cmp || cmp->opcode() != Opcode::kCompare || cmp->GetWord("direction") != "LT") return {};
  const HloInstruction *iv = cmp->operand(0), *limit = cmp->operand(1);
  if (iv->opcode() != Opcode::kGetTupleElement || limit->opcode() != Opcode::kConstant ||
      limit->literal().ints.empty())
    return {};
  const int64_t index = iv->GetInt("index").value_or(-1);
  const HloInstruction* init = w.operand(0);
  if (init->opcode() != Opcode::kTuple || index < 0 ||
      index >= static_cast<int64_t>(init->operand_count()))
    return {};
  const HloInstruction* start = init->operand(static_cast<size_t>(index));
  if (start->opcode() != Opcode::kConstant || start->literal().ints.empty()) return {};
  return std::max<int64_t>(0, limit->literal().ints[0] - start->literal().ints[0]);
}

class Lowerer {
 public:
  Lowerer(const hlo::HloModule& m, const passes::MemoryPlan& plan, const LowerOptions& o)
      : module_(m), plan_(plan), opt_(o), text_(static_cast<size_t>(o.cores)) {
    scratch_ = AlignUp(static_cast<uint64_t>(plan.peak_bytes), kScratchAlign);
    // Branch values get buffers of their own above the largest value sharing the scratch.
    uint64_t largest = 0;
    for (const auto& comp : m.computations())
      if (comp.get() != m.entry())
        for (const auto& i : comp->instructions())
          largest = std::max(largest, static_cast<uint64_t>(passes::PaddedBytes(i->shape())));
    branch_next_ = AlignUp(scratch_ + largest, kScratchAlign);
  }

  LoweredModule Run() {
    const HloComputation& entry = *module_.entry();
    out_.replicas = static_cast<int>(module_.replica_count);
    if (out_.replicas > 1 && out_.replicas != opt_.cores)
      throw std::invalid_argument("replica_count=" + std::to_string(out_.replicas) +
                                  " but the board has " + std::to_string(opt_.cores) + " cores");
    if (out_.replicas == 1 && opt_.cores > 1) {
      batch_ = AnalyzeBatch(entry, opt_.cores);
      out_.data_parallel = batch_.batch > 0;
    } else if (const HloInstruction* first = FirstInput(entry)) {
      batch_.batch = 0, batch_.inputs = {first};
    }
    for (const HloInstruction* in : batch_.inputs) out_.batch_parameters.push_back(in->name());
    SetUpInfeed();
    Emit(opt_.infeed ? "    wait seq, f" + std::to_string(kInfeedFlag) + ", 1   # infeed\n" : "");
    LowerComputation(entry, 1, /*entry=*/true);
    Emit("    halt\n");
    const HloInstruction* root = entry.root();
    std::vector<const HloInstruction*> leaves;
    if (root->opcode() == Opcode::kTuple)
      leaves.assign(root->operands().begin(), root->operands().end());
    else
      leaves.push_back(root);
    for (const HloInstruction* l : leaves)
      out_.outputs.push_back({l->name(), Address(l), batch_.carrying.count(l) > 0});
    for (auto& t : text_) out_.programs.push_back(t.str());
    out_.exact =
        std::all_of(out_.ops.begin(), out_.ops.end(), [](const LoweredOp& o) { return o.exact; });
    return std::move(out_);
  }

 private:
  static const HloInstruction* FirstInput(const HloComputation& entry) {
    for (const HloInstruction* p : entry.parameters())
      if (p->shape().IsArray() && p->shape().rank() >= 1) return p;
    return nullptr;
  }

  void SetUpInfeed() {
    int64_t b = batch_.batch ? batch_.batch : 0;
    if (!b && !batch_.inputs.empty())
      b = batch_.inputs[0]->shape().dims[0] * std::max(1, out_.replicas);
    out_.global_batch = b;
    out_.batch_per_core = b / opt_.cores;
    for (const HloInstruction* in : batch_.inputs) {
      const uint64_t per_core = BytesPerCore(in->shape(), batch_.batch, opt_.cores);
      if (out_.batch_per_core > 0)
        out_.example_bytes += per_core / static_cast<uint64_t>(out_.batch_per_core);
    }
    if (!batch_.inputs.empty()) out_.infeed_address = Address(batch_.inputs[0]);
  }

  // The HBM buffer of element `element` of `v` (a tuple-shaped op's result: see
  // passes::ElementBufferName).
  uint64_t Address(const HloInstruction* v, int64_t element = 0) {
    for (;;) {
      if (auto p = branch_parameters_.find(v); p != branch_parameters_.end()) {
        v = p->second;  // a branch's parameter is the conditional's operand
        continue;
      }
      if (v->opcode() == Opcode::kGetTupleElement) {
        element = v->GetInt("index").value_or(0);
      } else if (v->opcode() == Opcode::kTuple &&
                 element < static_cast<int64_t>(v->operand_count())) {
        v = v->operand(static_cast<size_t>(std::exchange(element, 0)));
        continue;
      } else if (v->opcode() != Opcode::kBitcast && v->opcode() != Opcode::kReshape) {
        break;
      }
      v = v->operand(0);
    }
    const std::string name = passes::ElementBufferName(v->name(), element);
    if (const passes::BufferInfo* b = plan_.Find(name); b && v->parent() == module_.entry())
      return static_cast<uint64_t>(b->offset);
    if (const passes::BufferInfo* b = plan_.Find(v->name()); b && v->parent() == module_.entry())
      return static_cast<uint64_t>(b->offset);
    if (branch_computations_.count(v->parent())) return BranchBuffer(v, element);
    return scratch_;  // values inside loops and calls share a scratch area (timing only)
  }

  // A value computed inside a conditional's branch: a buffer of its own (the branch's
  // result is bound to the conditional's buffer before the branch is lowered).
  uint64_t BranchBuffer(const HloInstruction* v, int64_t element) {
    auto [it, added] = branch_buffers_.emplace(std::make_pair(v, element), branch_next_);
    if (added)
      branch_next_ +=
          AlignUp(static_cast<uint64_t>(passes::PaddedBytes(ElementShape(v->shape(), element))),
                  kBranchBufferAlign);
    return it->second;
  }

  void Emit(const std::string& s) {
    for (auto& t : text_) t << s;
  }

  void LowerComputation(const HloComputation& comp, int64_t executions, bool entry) {
    for (const auto& owned : comp.instructions()) {
      const HloInstruction& i = *owned;
      if (i.opcode() == Opcode::kParameter && !entry) continue;
      LowerInstruction(i, executions, entry);
    }
  }

  void LowerInstruction(const HloInstruction& i, int64_t executions, bool entry) {
    const bool carries =
        entry ? (batch_.carrying.count(&i) || batch_.reduced.count(&i)) : in_batch_;
    switch (i.opcode()) {
      case Opcode::kWhile:
        return LowerWhile(i, executions, entry);
      case Opcode::kCall: {
        ++in_shared_scratch_;
        LowerCalled(*i.to_apply(), executions, carries);
        --in_shared_scratch_;
        return;
      }
      case Opcode::kConditional:
        return LowerConditional(i, executions, carries);
      default:
        break;
    }
    LoweredOp op;
    op.name = i.name();
    op.opcode = std::string(hlo::OpcodeName(i.opcode()));
    op.executions = executions;
    std::vector<std::string> per_core;
    try {
      if (hlo::GetOpcodeInfo(i.opcode()).category == hlo::OpCategory::kCollective) {
        per_core = CollectiveKernels(
            i,
            CollectiveContext{[this](const HloInstruction* v) { return Address(v); }, opt_.ring,
                              opt_.cores, CollectiveMailbox(opt_)},
            op);
      } else {
        OpContext ctx{[this](const HloInstruction* v) { return Address(v); },
                      carries ? batch_.batch : 0, opt_.cores, opt_.mxus_per_core, opt_.rng_seed};
        const std::string k = OpKernel(i, ctx, op);
        if (!k.empty()) per_core.assign(static_cast<size_t>(opt_.cores), k);
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("%" + i.name() + " (" + op.opcode + "): " + e.what());
    }
    if (in_shared_scratch_ > 0 && op.exact) {
      op.exact = false;
      op.note += std::string(op.note.empty() ? "" : "; ") +
                 "inside a while body or call: its values share one scratch buffer (timing only)";
    }
    AppendKernels(per_core);
    out_.flops_per_step_per_core += op.flops * static_cast<double>(executions);
    out_.ops.push_back(std::move(op));
    if (entry && batch_.reduced.count(&i)) AllReducePartial(i, executions);
  }

  // A value each core computed from its share of the batch: sum it over the cores.
  void AllReducePartial(const HloInstruction& i, int64_t executions) {
    LoweredOp op;
    op.name = i.name() + ".data-parallel-all-reduce";
    op.opcode = "all-reduce";
    op.executions = executions;
    op.note = "inserted: %" + i.name() + " is a partial sum over each core's share of the batch";
    AppendKernels(DataParallelAllReduce(Address(&i), BytesPerCore(i.shape(), 0, 1), op.name,
                                        opt_.ring, opt_.cores, CollectiveMailbox(opt_), op));
    out_.ops.push_back(std::move(op));
  }

  void AppendKernels(const std::vector<std::string>& per_core) {
    if (per_core.empty()) return;
    const std::string prefix = "k" + std::to_string(kernels_++) + "_";
    const std::string barrier = DrainBarrier(opt_.mxus_per_core);
    for (size_t c = 0; c < text_.size(); ++c)
      text_[c] << ScopeKernel(per_core[c], prefix) << barrier;
  }

  void LowerCalled(const HloComputation& comp, int64_t executions, bool carries) {
    const bool saved = in_batch_;
    in_batch_ = carries;
    LowerComputation(comp, executions, false);
    in_batch_ = saved;
  }

  // The branch a constant selector picks (XLA's rule: an index out of range picks the
  // last branch), or none when the selector is computed.
  static std::optional<size_t> ConstantBranch(const HloInstruction& selector, size_t branches,
                                              bool pred) {
    if (selector.opcode() != Opcode::kConstant) return std::nullopt;
    const hlo::Literal& l = selector.literal();
    if (l.ints.empty() && l.floats.empty()) return std::nullopt;
    const double v = l.ints.empty() ? l.floats[0] : static_cast<double>(l.ints[0]);
    if (pred) return v != 0 ? 0 : 1;
    return v < 0 || v >= static_cast<double>(branches) ? branches - 1 : static_cast<size_t>(v);
  }

  // conditional: the sequencer reads the predicate or branch index (branch_dispatch.h) and
  // runs only the chosen branch's kernels; every branch leaves its result in the
  // conditional's buffers, computed in place where it can, else copied there.
  void LowerConditional(const HloInstruction& c, int64_t executions, bool carries) {
    const std::vector<hlo::HloComputation*> branches = c.branch_computations();
    if (branches.empty() || branches.size() + 1 != c.operand_count())
      throw std::invalid_argument(
          "%" + c.name() + " (conditional): " + std::to_string(branches.size()) + " branches for " +
          std::to_string(c.operand_count()) + " operands");
    const bool pred = c.operand(0)->shape().type == hlo::PrimitiveType::kPred;
    LoweredOp op;
    op.name = c.name();
    op.opcode = "conditional";
    op.executions = executions;
    op.kind = KernelKind::kDma;
    op.exact = true;
    const size_t leaves = c.shape().IsTuple() ? c.shape().tuple_shapes.size() : 1;
    struct Copy {
      const HloInstruction* leaf;
      int64_t leaf_element, element;  // of the leaf's value, of the conditional's result
    };
    std::vector<std::vector<Copy>> copies(branches.size());
    std::erase_if(branch_buffers_, [&](const auto& b) {  // a branch another conditional ran
      return std::find(branches.begin(), branches.end(), b.first.first->parent()) != branches.end();
    });
    for (size_t k = 0; k < branches.size(); ++k) {
      const hlo::HloComputation* b = branches[k];
      branch_computations_.insert(b);
      const std::vector<HloInstruction*> params = b->parameters();
      if (params.size() != 1)
        throw std::invalid_argument("%" + c.name() + " (conditional): branch " + b->name() +
                                    " takes " + std::to_string(params.size()) +
                                    " parameters, not one");
      branch_parameters_[params[0]] = c.operand(k + 1);
      const HloInstruction* root = b->root();
      for (size_t e = 0; e < leaves; ++e) {
        const bool tuple_root = root->opcode() == Opcode::kTuple && c.shape().IsTuple();
        const HloInstruction* leaf = tuple_root ? root->operand(e) : root;
        const int64_t element = tuple_root ? 0 : static_cast<int64_t>(e);
        if (leaf->opcode() == Opcode::kConstant) {
          op.exact = false;
          op.note = "branch " + b->name() + " returns a constant, which has no data in HBM";
        }
        const auto key = std::make_pair(leaf, element);
        const bool in_place = leaf->parent() == b && !DefinesNoBuffer(*leaf) &&
                              !branch_buffers_.count(key) &&
                              ElementShape(leaf->shape(), element).IsArray();
        if (in_place)
          branch_buffers_[key] = Address(&c, static_cast<int64_t>(e));
        else
          copies[k].push_back({leaf, element, static_cast<int64_t>(e)});
      }
    }
    const std::string label = "cond" + std::to_string(conditionals_++);
    const std::optional<size_t> fixed = ConstantBranch(*c.operand(0), branches.size(), pred);
    if (!fixed)
      Emit(BranchDispatch(
          {Address(c.operand(0)), pred, static_cast<int>(branches.size()), label, c.name()}));
    out_.ops.push_back(std::move(op));
    for (size_t k = 0; k < branches.size(); ++k) {
      if (fixed && *fixed != k) continue;
      Emit(label + "_b" + std::to_string(k) + ":\n");
      LowerCalled(*branches[k], executions, carries);
      for (const Copy& copy : copies[k]) {
        const hlo::Shape& shape = ElementShape(copy.leaf->shape(), copy.leaf_element);
        const uint64_t bytes = BytesPerCore(shape, carries ? batch_.batch : 0, opt_.cores);
        const std::string k_copy =
            BranchResultCopy(Address(copy.leaf, copy.leaf_element), Address(&c, copy.element),
                             std::max<uint64_t>(bytes, 4), c.name());
        AppendKernels(std::vector<std::string>(text_.size(), k_copy));
      }
      Emit("    jmp " + label + "_end\n");
    }
    Emit(label + "_end:\n");
  }

  void LowerWhile(const HloInstruction& w, int64_t executions, bool entry) {
    const std::optional<int64_t> trips = TripCount(w);
    if (!trips)
      throw std::invalid_argument("%" + w.name() +
                                  " (while): the trip count is not static (no known_trip_count and "
                                  "the condition is not `i < constant` from a constant start)");
    const int depth = loop_depth_++;
    const std::string label = "loop" + std::to_string(loops_++),
                      slot = std::to_string(kLoopCounterSmem + 4 * depth);
    Emit("    li r31, 0\n    sst r31, r0, " + slot + "\n" + label + ":\n");
    const bool carries = entry ? batch_.carrying.count(&w) > 0 : in_batch_;
    ++in_shared_scratch_;
    if (*trips > 0) LowerCalled(*w.body(), executions * *trips, carries);
    --in_shared_scratch_;
    Emit("    sld r31, r0, " + slot + "\n    addi r31, r31, 1\n    sst r31, r0, " + slot +
         "\n    li r30, " + std::to_string(*trips) + "\n    blt r31, r30, " + label + "\n");
    --loop_depth_;
  }

  const hlo::HloModule& module_;
  const passes::MemoryPlan& plan_;
  const LowerOptions& opt_;
  std::vector<std::ostringstream> text_;
  LoweredModule out_;
  BatchAnalysis batch_;
  uint64_t scratch_ = 0, branch_next_ = 0;
  std::set<const HloComputation*> branch_computations_;
  std::map<const HloInstruction*, const HloInstruction*> branch_parameters_;
  std::map<std::pair<const HloInstruction*, int64_t>, uint64_t> branch_buffers_;
  int conditionals_ = 0, kernels_ = 0, loops_ = 0, loop_depth_ = 0;
  int in_shared_scratch_ = 0;  // > 0 inside while bodies and calls (Address: scratch_)
  bool in_batch_ = false;
};

}  // namespace

hlo::Result<LoweredModule> LowerModule(const hlo::HloModule& module, const passes::MemoryPlan& plan,
                                       const LowerOptions& options) {
  try {
    return Lowerer(module, plan, options).Run();
  } catch (const std::invalid_argument& e) {
    return hlo::Status::Error(e.what());
  }
}

}  // namespace tpusim::lowering
