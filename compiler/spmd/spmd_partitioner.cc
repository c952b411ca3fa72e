// The partitioning driver: every instruction of the global entry computation, in order,
// becomes its per-device Local (a tiled rule, a sharding annotation, or a replicated run);
// the old instructions are then dropped and the module says num_partitions = devices.
#include "compiler/spmd/spmd_partitioner.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "compiler/passes/ir_edit.h"
#include "compiler/spmd/annotations.h"
#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Opcode;
using hlo::Result;
using hlo::Status;

// A global program states a layout other than replicated (an unannotated one gets the batch
// split batch_sharding.h infers, as parameter shardings). XLA's scheduled output is
// per-device already, whatever shardings it still carries, unless that pass split it; its
// before-optimizations dump is global though its header already says num_partitions=8.
bool HasShardings(const hlo::HloModule& module, int64_t devices) {
  if (module.replica_count != 1 || !module.entry() ||
      (IsScheduled(module) && module.inferred_batch == 0) ||
      (module.num_partitions != 1 && module.num_partitions != devices)) {
    return false;
  }
  return StatesSplit(module);  // a bad sharding is reported when partitioning
}

namespace {

// XLA's CallInliner, which runs before its partitioner: the entry's calls (jitted helpers,
// shard_map bodies) become its own instructions, so every op is partitioned in one place.
Status InlineCalls(hlo::HloModule& module) {
  for (int round = 0; round < 256; ++round) {
    passes::ModuleEdits edits;
    hlo::HloComputation& entry = *module.entry();
    std::vector<HloInstruction*> calls;
    for (const auto& i : entry.instructions()) {
      if (i->opcode() == Opcode::kCall && i->to_apply()) calls.push_back(i.get());
    }
    if (calls.empty()) return Status::Ok();
    for (HloInstruction* c : calls) passes::InlineInto(entry, *c, *c->to_apply(), edits);
    if (Status s = passes::ApplyEdits(module, edits); !s.ok()) return s;
  }
  return Status::Error("calls nested deeper than 256 levels");
}

}  // namespace

Result<bool> SpmdPartitionerPass::Run(hlo::HloModule& module) {
  if (devices_ < 2 || !HasShardings(module, devices_)) return false;
  if (Status s = InlineCalls(module); !s.ok()) return s;
  Partitioner p(module, devices_);
  if (Status s = p.Run(); !s.ok()) return s;
  return true;
}

HloInstruction* Partitioner::Add(std::string_view base, Opcode op, hlo::Shape shape,
                                 const std::vector<HloInstruction*>& operands) {
  HloInstruction* i = passes::AddNew(*comp_, base, op, std::move(shape), operands);
  // What the partitioner adds for an op (its collectives, a batch norm's expansion) is that
  // op's work in the profile: the framework's name and source line carry over, as in XLA.
  if (current_) {
    if (const std::string* metadata = current_->RawAttr("metadata")) {
      i->SetAttr("metadata", hlo::RawText{*metadata});
    }
  }
  return i;
}

HloInstruction* Partitioner::Clone(const HloInstruction& from, hlo::Shape shape,
                                   const std::vector<HloInstruction*>& operands) {
  // The same name: the original goes when partitioning ends, and buffers, inputs and
  // reports keep naming the parameters and results as the user's module does.
  auto c = passes::CloneWithOperands(from, from.name(), operands);
  c->mutable_shape() = std::move(shape);
  // Global annotations say nothing of a per-device value (parameters and the root get
  // their global layout back, in HLO's form).
  auto& attrs = c->mutable_attributes();
  attrs.erase(std::remove_if(attrs.begin(), attrs.end(),
                             [](const hlo::Attribute& a) { return a.key == "sharding"; }),
              attrs.end());
  return comp_->AddInstruction(std::move(c));
}

hlo::HloComputation* Partitioner::AddComputation(hlo::PrimitiveType t) {
  auto it = adders_.find(static_cast<int>(t));
  if (it != adders_.end()) return it->second;
  std::string name = passes::UniqueComputationName(m_, "spmd.add");
  hlo::HloComputation* c = m_.AddComputation(std::make_unique<hlo::HloComputation>(name));
  hlo::Shape scalar = hlo::Shape::Array(t, {});
  HloInstruction* a = passes::AddNew(*c, "a", Opcode::kParameter, scalar, {});
  HloInstruction* b = passes::AddNew(*c, "b", Opcode::kParameter, scalar, {});
  a->set_parameter_number(0);
  b->set_parameter_number(1);
  c->set_root(passes::AddNew(*c, "sum", Opcode::kAdd, scalar, {a, b}));
  return adders_[static_cast<int>(t)] = c;
}

HloInstruction* Partitioner::AllReduce(HloInstruction* v, hlo::HloComputation* reducer,
                                       std::optional<hlo::ReplicaGroups> groups) {
  HloInstruction* r = Add(v->name() + ".all-reduce", Opcode::kAllReduce, v->shape(), {v});
  MarkCollective(*r, groups ? std::move(*groups) : AllDevices());
  SetReducer(*r, reducer);
  return r;
}

void Partitioner::SetReducer(HloInstruction& c, hlo::HloComputation* reducer) {
  hlo::ComputationRefs refs;
  refs.names = {reducer->name()};
  refs.computations = {reducer};
  c.SetAttr("to_apply", refs);
}

hlo::ReplicaGroups Partitioner::AllDevices() const {
  std::vector<int64_t> all(static_cast<size_t>(n_));
  std::iota(all.begin(), all.end(), 0);
  hlo::ReplicaGroups groups;
  groups.groups = {all};
  return groups;
}

void Partitioner::MarkCollective(HloInstruction& c, hlo::ReplicaGroups groups,
                                 std::optional<int64_t> dimension) {
  c.SetAttr("channel_id", next_channel_++);
  c.SetAttr("replica_groups", std::move(groups));
  if (dimension) c.SetAttr("dimensions", hlo::IntList{*dimension});
  c.SetAttr("use_global_device_ids", hlo::RawText{"true"});
}

Local Partitioner::Combined(HloInstruction* part, hlo::HloComputation* reducer) {
  if (pure_) return Local{part, HloSharding::Replicated(), reducer};
  // A sum every reader takes in one tiled layout: each device keeps only its reduced tile
  // (a reduce-scatter, half the ring traffic of an all-reduce), as XLA partitions a partial
  // result whose propagated sharding is tiled.
  auto want = current_ ? wanted_.find(current_) : wanted_.end();
  const hlo::Shape& shape = part->shape();
  if (want != wanted_.end() && shape.IsArray() && current_->shape() == shape &&
      reducer->root()->opcode() == Opcode::kAdd) {
    const int64_t d = OneTiledDim(want->second);
    if (d >= 0 && shape.dims[static_cast<size_t>(d)] % n_ == 0) {
      hlo::Shape out = shape;
      out.dims[static_cast<size_t>(d)] /= n_;
      HloInstruction* r =
          Add(part->name() + ".reduce-scatter", Opcode::kReduceScatter, out, {part});
      MarkCollective(*r, AllDevices(), d);
      SetReducer(*r, reducer);
      return Local{r, want->second};
    }
  }
  return Local{AllReduce(part, reducer), HloSharding::Replicated()};
}

// Every operand gathered whole, the op as written on global shapes.
Result<Local> Partitioner::Replicated(const HloInstruction& i) {
  std::vector<HloInstruction*> ops;
  for (const HloInstruction* o : i.operands()) {
    const Local& l = Of(o);
    if (l.manual()) {
      return Status::Error("%" + i.name() + " (" + std::string(hlo::OpcodeName(i.opcode())) +
                           ") uses %" + o->name() +
                           ", a shard_map body's per-device value, outside the body");
    }
    Result<HloInstruction*> r = Reshard(l, o->shape(), HloSharding::Replicated());
    if (!r.ok()) return r.status();
    ops.push_back(r.value());
  }
  HloInstruction* whole = Clone(i, i.shape(), ops);
  // A loop or branch computation another op had partitioned (two loops sharing a body and
  // condition, one over tiles, one whole): this op runs a copy of its global form; one no op
  // partitioned yet is recorded in its global form, so an op that partitions it later works
  // on a copy. (Fusions see to theirs in FusionRule.)
  const bool control = hlo::GetOpcodeInfo(i.opcode()).category == hlo::OpCategory::kControl;
  for (hlo::Attribute& a : whole->mutable_attributes())
    if (auto* refs = std::get_if<hlo::ComputationRefs>(&a.value); refs && control)
      for (size_t k = 0; k < refs->computations.size() && k < refs->names.size(); ++k) {
        hlo::HloComputation* c = refs->computations[k];
        if (!c) continue;
        if (globals_.count(c)) {
          refs->computations[k] = CopyOfGlobal(*c);
          refs->names[k] = refs->computations[k]->name();
          continue;
        }
        Global g{{}, c->root()};
        for (const auto& ci : c->instructions()) g.instructions.push_back(ci.get());
        globals_[c] = std::move(g);
      }
  return Local{whole, HloSharding::Replicated()};
}

Result<Local> Partitioner::PartitionParameter(const HloInstruction& i, const HloSharding& s) {
  Result<hlo::Shape> shape = LocalShape(i.shape(), s);
  if (!shape.ok()) return Status::Error("%" + i.name() + ": " + shape.status().message());
  return Local{Clone(i, shape.value(), {}), s};
}

Result<Local> Partitioner::PartitionOne(const HloInstruction& i) {
  struct Current {  // the op being partitioned, for Add's metadata; restored on return
    const HloInstruction*& slot;
    const HloInstruction* saved;
    ~Current() { slot = saved; }
  } current{current_, std::exchange(current_, &i)};
  if (i.opcode() == Opcode::kParameter) {
    Result<std::optional<HloSharding>> s = StatedSharding(m_, i);
    if (!s.ok()) return s.status();
    Result<Local> p = PartitionParameter(i, s.value() ? **s : HloSharding::Replicated());
    if (p.ok()) p->value->SetAttr("sharding", hlo::RawText{p->sharding.ToString()});
    return p;  // with the global layout in HLO's form
  }
  for (const HloInstruction* o : i.operands()) {
    if (Of(o).partial) {  // a fusion's partial result feeds more of its body
      impure_ = true;
      return Status::Error("%" + i.name() + " uses a partial result");
    }
  }
  if (i.opcode() == Opcode::kCustomCall) {
    Result<std::optional<Local>> l = ShardingCall(i);
    if (!l.ok()) return l.status();
    return **l;
  }
  bool manual = false, sharded = false;
  for (const HloInstruction* o : i.operands()) {
    manual |= Of(o).manual();
    sharded |= !Of(o).manual() && !Of(o).replicated();
  }
  if (manual && sharded) {
    return Status::Error("%" + i.name() + " (" + std::string(hlo::OpcodeName(i.opcode())) +
                         ") mixes a shard_map body's per-device values with a sharded global one");
  }
  // An op of a shard_map body (inlined): as written, on per-device values and on whole ones
  // (constants), which every device holds alike.
  if (manual) {
    std::vector<HloInstruction*> ops;
    for (const HloInstruction* o : i.operands()) ops.push_back(Of(o).value);
    HloSharding manual;
    manual.kind = HloSharding::Kind::kManual;
    return Local{Clone(i, i.shape(), ops), manual};
  }
  Result<std::optional<Local>> tiled = TiledRule(i);
  if (!tiled.ok()) return tiled.status();
  Local out;
  if (tiled.value()) {
    out = **tiled;
  } else {
    Result<Local> r = Replicated(i);
    if (!r.ok()) return r.status();
    out = r.value();
  }
  // A stated sharding is a constraint on the value (XLA's sharding annotations).
  Result<std::optional<HloSharding>> stated = StatedSharding(m_, i);
  if (!stated.ok()) return stated.status();
  if (stated.value() && !(**stated == out.sharding)) {
    Result<HloInstruction*> r = Reshard(out, i.shape(), **stated);
    if (!r.ok()) return Status::Error("%" + i.name() + ": " + r.status().message());
    out = Local{r.value(), **stated};
  }
  return out;
}

hlo::HloComputation* Partitioner::CopyOfGlobal(const hlo::HloComputation& c) {
  const Global& g = globals_.at(&c);
  auto copy = std::make_unique<hlo::HloComputation>(passes::UniqueComputationName(m_, c.name()));
  std::unordered_map<const HloInstruction*, HloInstruction*> now;
  for (const HloInstruction* i : g.instructions) {
    std::vector<HloInstruction*> ops;
    for (const HloInstruction* o : i->operands()) ops.push_back(now.at(o));
    now[i] = copy->AddInstruction(passes::CloneWithOperands(*i, i->name(), ops));
  }
  copy->set_root(now.at(g.root));
  return m_.AddComputation(std::move(copy));
}

Result<std::optional<Local>> Partitioner::PartitionCalled(
    hlo::HloComputation*& computation, const std::vector<HloSharding>& params, bool pure,
    const std::optional<HloSharding>& root_as) {
  // Shared with an op partitioned before (or tried, for a fusion): a copy of its own.
  if (globals_.count(computation)) computation = CopyOfGlobal(*computation);
  hlo::HloComputation& c = *computation;
  hlo::HloComputation* const saved_comp = comp_;
  const bool saved_pure = pure_, saved_impure = impure_;
  comp_ = &c, pure_ = pure_ || pure, impure_ = false;
  std::vector<const HloInstruction*> old;
  for (const auto& i : c.instructions()) old.push_back(i.get());
  globals_[&c] = {old, c.root()};  // to copy the global computation whole
  auto attempt = [&]() -> Result<Local> {
    for (const HloInstruction* i : old) {
      Result<Local> l = i->opcode() == Opcode::kParameter
                            ? PartitionParameter(*i, params.at(i->parameter_number()))
                            : PartitionOne(*i);
      if (!l.ok() || impure_) return l.ok() ? Status::Error("impure") : l.status();
      local_[i] = l.value();
    }
    Local root = Of(c.root());
    if (root_as && !(root.sharding == *root_as)) {
      Result<HloInstruction*> r = Reshard(root, c.root()->shape(), *root_as);
      if (!r.ok()) return r.status();
      root = Local{r.value(), *root_as};
    }
    if (root.manual())
      return Status::Error("a shard_map body's per-device value leaves %" + c.name());
    return root;
  };
  Result<Local> root = attempt();
  const bool failed = pure_ && impure_;
  comp_ = saved_comp, pure_ = saved_pure, impure_ = saved_impure;
  if (failed || !root.ok()) {  // the new instructions go; the computation stays as it was
    for (size_t k = old.size(); k < c.instructions().size(); ++k) {
      remove_.insert(c.instructions()[k].get());
    }
    if (failed) return std::optional<Local>();
    return root.status();
  }
  c.set_root(root->value);
  for (const HloInstruction* i : old) remove_.insert(i);
  return std::optional<Local>(root.value());
}

Status Partitioner::Run() {
  comp_ = m_.entry();
  FindReaderLayouts();
  std::vector<const HloInstruction*> old;
  for (const auto& i : comp_->instructions()) old.push_back(i.get());
  const HloInstruction* old_root = comp_->root();
  for (const HloInstruction* i : old) {
    Result<Local> l = PartitionOne(*i);
    if (!l.ok()) return l.status();
    local_[i] = l.value();
  }
  if (Of(old_root).manual()) {
    return Status::Error("the entry's result %" + old_root->name() +
                         " is a shard_map body's per-device value");
  }
  HloInstruction* root = Of(old_root).value;
  if (root->opcode() != Opcode::kParameter) {  // the result's global layout, as XLA records it
    root->SetAttr("sharding", hlo::RawText{Of(old_root).sharding.ToString()});
  }
  comp_->set_root(root);
  m_.spmd_output_sharding = Of(old_root).sharding;
  m_.spmd_parameters_shardings.clear();
  for (const HloInstruction* p : old) {
    if (p->opcode() != Opcode::kParameter) continue;
    const size_t n = static_cast<size_t>(p->parameter_number());
    if (m_.spmd_parameters_shardings.size() <= n) m_.spmd_parameters_shardings.resize(n + 1);
    m_.spmd_parameters_shardings[n] = Of(p).sharding;
  }
  passes::ModuleEdits edits;
  for (const HloInstruction* i : old) edits.remove.insert(i);
  for (const HloInstruction* i : remove_) edits.remove.insert(i);
  // What the partitioner made for dead values (their gathers) goes with them: collectives
  // outlive DCE, and these are not the user's.
  std::unordered_set<const HloInstruction*> live;
  std::vector<const HloInstruction*> work = {root};
  while (!work.empty()) {
    const HloInstruction* i = work.back();
    work.pop_back();
    if (!live.insert(i).second) continue;
    for (const HloInstruction* o : i->operands()) work.push_back(o);
  }
  for (const auto& i : comp_->instructions()) {
    if (!live.count(i.get()) && i->opcode() != Opcode::kParameter) edits.remove.insert(i.get());
  }
  m_.num_partitions = n_;
  bool stated = false;
  for (hlo::Attribute& a : m_.header) {
    if (a.key == "num_partitions") a.value = n_, stated = true;
  }
  if (!stated) m_.header.push_back({"num_partitions", n_});
  return passes::ApplyEdits(m_, edits);
}

}  // namespace tpusim::spmd
