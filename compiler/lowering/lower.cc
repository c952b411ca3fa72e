#include "compiler/lowering/lower.h"

#include <algorithm>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "compiler/lowering/asm_util.h"
#include "compiler/lowering/collective_kernels.h"
#include "compiler/lowering/data_parallel.h"
#include "compiler/lowering/op_kernels.h"

namespace tpusim::lowering {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

constexpr uint64_t kScratchAlign = 1 << 20;

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
    scratch_ = (static_cast<uint64_t>(plan.peak_bytes) + kScratchAlign - 1) / kScratchAlign *
               kScratchAlign;
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

  uint64_t Address(const HloInstruction* v) const {
    int64_t element = 0;  // of a tuple-shaped op's result (see passes::ElementBufferName)
    for (;;) {
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
    return scratch_;  // values inside loops and calls share a scratch area (timing only)
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
      case Opcode::kCall:
        return LowerCalled(*i.to_apply(), executions, carries);
      case Opcode::kConditional:  // the first branch stands for all (noted in the op list)
        if (!i.branch_computations().empty())
          LowerCalled(*i.branch_computations()[0], executions, carries);
        return;
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
                              opt_.cores},
            op);
      } else {
        OpContext ctx{[this](const HloInstruction* v) { return Address(v); },
                      carries ? batch_.batch : 0, opt_.cores, opt_.mxus_per_core};
        const std::string k = OpKernel(i, ctx, op);
        if (!k.empty()) per_core.assign(static_cast<size_t>(opt_.cores), k);
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("%" + i.name() + " (" + op.opcode + "): " + e.what());
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
                                        opt_.ring, opt_.cores, op));
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
    if (*trips > 0) LowerCalled(*w.body(), executions * *trips, carries);
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
  uint64_t scratch_ = 0;
  int kernels_ = 0, loops_ = 0, loop_depth_ = 0;
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
