#include "compiler/lowering/driver/lower.h"
#include "compiler/hlo/metadata.h"

#include "compiler/hlo/sharding.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include "compiler/analysis/cost_analysis.h"
#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/driver/emitter_table.h"
#include "compiler/lowering/driver/lowerer.h"

namespace tpusim::lowering {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

// How many parts `p`'s recorded global layout splits its leading dimension into (0: none
// recorded).
int64_t LeadingShards(const HloInstruction& p) {
  const std::string* raw = p.RawAttr("sharding");
  if (!raw || !p.shape().IsArray() || p.shape().rank() < 1) return 0;
  hlo::Result<hlo::HloSharding> s = hlo::ParseSharding(*raw);
  return s.ok() ? s->ShardsAlong(0) : 0;
}

// The inputs of a per-device program: the parameters whose recorded global layout splits
// their leading dimension over every device (the batch of a data-parallel step: examples
// and labels), those a tuple result does not return in their shape first (a training step
// returns its weights: FSDP splits them too); on a mesh, over one axis (2 x 4: the batch
// over 'data'), those not returned, the first one's split giving the batch; else the first
// array parameter.
std::vector<const HloInstruction*> DeviceInputs(const HloComputation& entry, int64_t devices) {
  std::vector<const HloInstruction*> split, inputs, mesh;
  std::vector<const hlo::Shape*> results;
  const HloInstruction* root = entry.root();
  if (root->opcode() == Opcode::kTuple)
    for (const HloInstruction* o : root->operands()) results.push_back(&o->shape());
  for (const HloInstruction* p : entry.parameters()) {
    const int64_t shards = LeadingShards(*p);
    const bool returned = std::any_of(results.begin(), results.end(), [&](const hlo::Shape* r) {
      return r->dims == p->shape().dims && r->type == p->shape().type;
    });
    if (shards == devices) (returned ? split : inputs).push_back(p);
    if (shards > 1 && shards < devices && !returned) mesh.push_back(p);
  }
  if (!inputs.empty()) return inputs;
  if (!split.empty()) return split;
  if (!mesh.empty()) return mesh;
  for (const HloInstruction* p : entry.parameters())
    if (p->shape().IsArray() && p->shape().rank() >= 1) return {p};
  return {};
}

// Whether the module's entry starts asynchronous collectives (async-collective-creator): its
// collectives then run on the collective stream.
bool HasAsyncCollectives(const hlo::HloModule& m) {
  for (const auto& i : m.entry()->instructions())
    if (hlo::IsAsyncCollectiveStart(i->opcode())) return true;
  return false;
}

// Whether the module has one collective, a ring one (all-reduce, all-gather, reduce-scatter):
// its every entry sends and expects the same tokens, so the targeted handshake is safe
// (collectives::Mailbox::barrier).
bool HasOneRingCollective(const hlo::HloModule& m) {
  int rings = 0, others = 0;
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions()) {
      const Opcode op = i->opcode();
      if (op == Opcode::kAllReduce || op == Opcode::kAllGather || op == Opcode::kReduceScatter ||
          hlo::IsAsyncCollectiveStart(op))
        ++rings;
      else if (!hlo::IsAsyncCollectiveDone(op) && hlo::IsCollective(op))
        ++others;
    }
  return rings == 1 && others == 0;
}

}  // namespace

Lowerer::Lowerer(const hlo::HloModule& m, const passes::MemoryPlan& plan, const LowerOptions& o)
    : module_(m),
      plan_(plan),
      opt_(o),
      text_(static_cast<size_t>(o.cores)),
      collective_text_(static_cast<size_t>(o.cores)),
      buffers_(m, plan) {}

LoweredModule Lowerer::Run() {
  const HloComputation& entry = *module_.entry();
  // Each device (replica x partition) of a module runs on its own core.
  out_.replicas = static_cast<int>(module_.replica_count * module_.num_partitions);
  out_.partitions = static_cast<int>(module_.num_partitions);
  if (out_.replicas > 1 && out_.replicas != opt_.cores)
    throw std::invalid_argument("replica_count=" + std::to_string(module_.replica_count) +
                                " x num_partitions=" + std::to_string(module_.num_partitions) +
                                " devices but the board has " + std::to_string(opt_.cores) +
                                " cores");
  // A single-replica module the batch-sharding pass did not split: every core runs it whole.
  if (out_.replicas == 1 && opt_.cores > 1) {
    out_.not_split_reason = module_.batch_not_split_reason;
  } else {
    inputs_ = DeviceInputs(entry, out_.replicas);
    out_.data_parallel = module_.inferred_batch > 0;
  }
  ctx_.address = [this](const HloInstruction* v) { return Address(v); };
  ctx_.cores = opt_.cores;
  ctx_.mxus = opt_.mxus_per_core;
  ctx_.rng_seed = opt_.rng_seed;
  ctx_.ring = opt_.ring;
  if (const std::optional<uint64_t> word = CollectiveMailbox(opt_))
    ctx_.mailbox = collectives::Mailbox{*word, opt_.cores, !HasOneRingCollective(module_)};
  ctx_.per_device = out_.replicas > 1;
  ctx_.collective_stream = out_.collective_stream = HasAsyncCollectives(module_);
  ctx_.partitions = module_.num_partitions;
  for (const HloInstruction* in : inputs_) out_.batch_parameters.push_back(in->name());
  SetUpInfeed();
  Emit(opt_.infeed ? "    wait seq, f" + std::to_string(assembly::kInfeedFlag) + ", 1   # infeed\n"
                   : "");
  LowerComputation(entry, 1, /*entry=*/true);
  const HloInstruction* root = entry.root();
  std::vector<const HloInstruction*> leaves;
  if (root->opcode() == Opcode::kTuple)
    leaves.assign(root->operands().begin(), root->operands().end());
  else
    leaves.push_back(root);
  WriteConstantResults(leaves);
  AwaitCollectivesThrough(nullptr);
  Emit("    halt\n");
  if (const std::optional<uint64_t> top = CollectiveMailbox(opt_)) buffers_.CheckCapacity(*top);
  for (const HloInstruction* l : leaves) out_.outputs.push_back({l->name(), Address(l)});
  for (size_t c = 0; c < text_.size(); ++c)
    out_.programs.push_back(text_[c].str() + CollectiveStreamText(c));
  out_.exact =
      std::all_of(out_.ops.begin(), out_.ops.end(), [](const LoweredOp& o) { return o.exact; });
  return std::move(out_);
}

// Constants have no kernel (their users take them as immediates): one that is a result of
// the entry is written into its output buffer.
void Lowerer::WriteConstantResults(const std::vector<const HloInstruction*>& leaves) {
  std::vector<const HloInstruction*> constants;
  for (const HloInstruction* l : leaves)
    if (l->opcode() == Opcode::kConstant && l->shape().IsArray()) constants.push_back(l);
  if (constants.empty()) return;
  LoweredOp op =
      CopyOp(constants.size() == 1 ? constants[0]->name() + ".result" : "constant-results", 1);
  std::vector<ValueCopy> copies;
  for (const HloInstruction* l : constants)
    copies.push_back(CopyOf(l, 0, Address(l), l->shape(), op));
  EmitCopies(copies, op.name, op);
  out_.ops.push_back(std::move(op));
}

// Each device holds its share of the step's batch: its inputs' leading dimension.
void Lowerer::SetUpInfeed() {
  // A recorded layout says how many parts the batch is in (a mesh's data axis); else one per
  // device.
  const int64_t shards = inputs_.empty() ? 0 : LeadingShards(*inputs_[0]);
  const int64_t b = inputs_.empty() ? 0
                                    : inputs_[0]->shape().dims[0] *
                                          (shards > 0 ? shards : std::max(1, out_.replicas));
  out_.global_batch = b;
  out_.batch_per_core = shards > 0 ? inputs_[0]->shape().dims[0] : b / opt_.cores;
  for (const HloInstruction* in : inputs_) {
    if (out_.batch_per_core > 0)
      out_.example_bytes += ByteSize(in->shape()) / static_cast<uint64_t>(out_.batch_per_core);
    const hlo::PrimitiveType t = in->shape().type;
    const bool ids = t == hlo::PrimitiveType::kS32 || t == hlo::PrimitiveType::kU32 ||
                     t == hlo::PrimitiveType::kS64;
    const size_t rank = in->shape().dims.size();
    const size_t end = ids ? rank : (rank > 0 ? rank - 1 : 0);  // a float's features last
    int64_t positions = 1;
    for (size_t d = 1; d < end; ++d) positions *= in->shape().dims[d];
    out_.rows_per_example = std::max(out_.rows_per_example, positions);
  }
  if (!inputs_.empty()) out_.infeed_address = Address(inputs_[0]);
}

void Lowerer::Emit(const std::string& s) {
  CloseWindow();
  EmitRaw(s);
}

void Lowerer::LowerComputation(const HloComputation& comp, int64_t executions, bool entry) {
  for (const auto& owned : comp.instructions()) {
    const HloInstruction& i = *owned;
    if (i.opcode() == Opcode::kParameter && !entry) continue;
    LowerInstruction(i, executions);
  }
}

// The CONTROL rows of the emitter table.
void Lowerer::LowerControl(const HloInstruction& i, int64_t executions) {
  switch (i.opcode()) {
#define CONTROL(op, method) \
  case Opcode::op:          \
    return method(i, executions);
#include "compiler/lowering/driver/emitter_table.def"
    default:
      throw std::invalid_argument("%" + i.name() + ": not control flow");
  }
}

void Lowerer::LowerInstruction(const HloInstruction& i, int64_t executions) {
  const EmitterRow& row = EmitterFor(i.opcode());
  if (row.kind == EmitterRow::Kind::kControl) {
    // A wait inside a loop or branch would run once per trip: the all-reduces in flight are
    // awaited before it.
    AwaitCollectivesThrough(nullptr);
    CloseWindow();
    ++control_depth_;
    LowerControl(i, executions);
    --control_depth_;
    return;
  }
  LoweredOp op;
  std::vector<std::string> per_core;
  auto emit = [&](int64_t vmem_limit) {
    op = LoweredOp{};
    op.name = i.name();
    op.framework_op = hlo::MetadataOf(i).op_name;
    op.source = hlo::SourceLocation(module_, i);
    op.opcode = std::string(hlo::OpcodeName(i.opcode()));
    op.executions = executions;
    per_core.clear();
    ctx_.vmem_limit = vmem_limit;
    try {
      switch (row.kind) {
        case EmitterRow::Kind::kNoCode:
          op.exact = true;
          break;
        case EmitterRow::Kind::kKernel:
          if (const std::string k = row.kernel(i, ctx_, op); !k.empty())
            per_core.assign(static_cast<size_t>(opt_.cores), k);
          break;
        case EmitterRow::Kind::kCoreKernels:
          per_core = row.core_kernels(i, ctx_, op);
          break;
        default:
          throw std::invalid_argument("no kernel for this op on the TensorCore");
      }
    } catch (const std::invalid_argument& e) {
      ctx_.vmem_limit = kCoreVmem;
      throw std::invalid_argument("%" + i.name() + " (" + op.opcode + "): " + e.what());
    }
    ctx_.vmem_limit = kCoreVmem;
  };
  // Beside an all-reduce in flight a kernel plans for the VMEM below the collective stream's
  // region. It runs there when that costs it nothing (the same code as with all of VMEM) or
  // when it ends within the all-reduce's estimated time left; else, or when it cannot keep
  // to the region, it runs after the all-reduce, planned for all of VMEM.
  emit(kCoreVmem);
  if (!outstanding_.empty() && !hlo::IsCollective(i.opcode()) && !per_core.empty()) {
    const LoweredOp full_op = op;
    const std::vector<std::string> full = per_core;
    emit(beside_limit_);
    const bool fits = op.vmem_bytes >= 0 && op.vmem_bytes <= beside_limit_;
    const bool covered = opt_.peak_flops_per_s <= 0 || KernelSeconds(op) <= cover_left_;
    if (!fits || (per_core != full && !covered)) {
      op = full_op, per_core = full;
      AwaitCollectivesThrough(nullptr);
    }
  }
  // A kernel that plans the same code in half of the VMEM it may use can run beside the
  // one before it (kernel windows): it reports that half.
  if (WindowCandidate(i) && !per_core.empty()) {
    const int64_t half = WindowVmem();
    if (op.vmem_bytes < 0 || op.vmem_bytes > half) {
      const LoweredOp full_op = op;
      const std::vector<std::string> full = per_core;
      bool same = false;
      try {
        emit(half);
        same = per_core == full && op.vmem_bytes >= 0 && op.vmem_bytes <= half;
      } catch (const std::invalid_argument&) {
      }
      if (!same) op = full_op, per_core = full;
    }
  }
  if (hlo::IsAsyncCollectiveDone(i.opcode())) {
    AwaitCollectivesThrough(i.operand(0));
  } else if (ctx_.collective_stream && hlo::IsCollective(i.opcode())) {
    if (hlo::IsAsyncCollectiveStart(i.opcode())) {
      cover_left_ += CollectiveSeconds(i, op);
      beside_limit_ = op.collective_vmem_base >= 0 ? op.collective_vmem_base : kBesideCollective;
    }
    AppendCollective(per_core, i);
  } else {
    AppendKernel(per_core, op, i);
    if (!outstanding_.empty() && !per_core.empty() && opt_.peak_flops_per_s > 0 &&
        (cover_left_ -= KernelSeconds(op)) <= 0)
      AwaitCollectivesThrough(nullptr);
  }
  op.model_flops = analysis::CostOf(i).flops;
  out_.flops_per_step_per_core += op.flops * static_cast<double>(executions);
  out_.model_flops_per_step_per_core += op.model_flops * static_cast<double>(executions);
  out_.ops.push_back(std::move(op));
}

void Lowerer::AppendDrained(const std::vector<std::string>& per_core) {
  if (per_core.empty()) return;
  CloseWindow();
  const std::string prefix = "k" + std::to_string(kernels_++) + "_";
  const std::string barrier = assembly::DrainBarrier(opt_.mxus_per_core);
  for (size_t c = 0; c < text_.size(); ++c)
    text_[c] << assembly::ScopeKernel(per_core[c], prefix) << barrier;
}

void Lowerer::LowerCalled(const HloComputation& comp, int64_t executions) {
  LowerComputation(comp, executions, /*entry=*/false);
}

hlo::Result<LoweredModule> LowerModule(const hlo::HloModule& module, const passes::MemoryPlan& plan,
                                       const LowerOptions& options) {
  try {
    return Lowerer(module, plan, options).Run();
  } catch (const std::invalid_argument& e) {
    return hlo::Status::Error(e.what());
  }
}

}  // namespace tpusim::lowering
