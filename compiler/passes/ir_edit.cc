// Rebuilding modules with edits applied; see ir_edit.h.
#include "compiler/passes/ir_edit.h"

#include <utility>

namespace tpusim::passes {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloModule;
using hlo::Status;

UserMap ComputeUsers(const HloComputation& c) {
  UserMap users;
  for (const auto& i : c.instructions()) {
    users[i.get()];
    for (HloInstruction* op : i->operands()) {
      std::vector<HloInstruction*>& u = users[op];
      if (u.empty() || u.back() != i.get()) u.push_back(i.get());
    }
  }
  return users;
}

std::string UniqueName(const HloComputation& c, std::string_view base) {
  std::string name(base);
  for (int n = 1; c.Find(name); ++n) name = std::string(base) + "." + std::to_string(n);
  return name;
}

std::string UniqueComputationName(const HloModule& m, std::string_view base) {
  std::string name(base);
  for (int n = 1; m.Find(name); ++n) name = std::string(base) + "." + std::to_string(n);
  return name;
}

std::unique_ptr<HloInstruction> CloneWithOperands(const HloInstruction& from, std::string name,
                                                  const std::vector<HloInstruction*>& operands) {
  auto out = std::make_unique<HloInstruction>(std::move(name), from.opcode(), from.shape());
  out->set_parameter_number(from.parameter_number());
  out->mutable_literal() = from.literal();
  out->mutable_attributes() = from.attributes();
  for (HloInstruction* op : operands) out->AddOperand(op);
  return out;
}

std::vector<HloComputation*> KernelComputations(const hlo::HloModule& m) {
  std::unordered_set<HloComputation*> set;
  if (m.entry()) set.insert(m.entry());
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions())
      if (i->opcode() == hlo::Opcode::kCall || i->opcode() == hlo::Opcode::kWhile ||
          i->opcode() == hlo::Opcode::kConditional)
        for (HloComputation* called : i->called_computations()) set.insert(called);
  std::vector<HloComputation*> out;
  for (const auto& c : m.computations())
    if (set.count(c.get())) out.push_back(c.get());
  return out;
}

HloInstruction* AddNew(HloComputation& c, std::string_view base, hlo::Opcode opcode,
                       hlo::Shape shape, const std::vector<HloInstruction*>& operands) {
  auto instr = std::make_unique<HloInstruction>(UniqueName(c, base), opcode, std::move(shape));
  for (HloInstruction* op : operands) instr->AddOperand(op);
  return c.AddInstruction(std::move(instr));
}

HloInstruction* ModuleEdits::Resolve(HloInstruction* i) const {
  for (size_t guard = 0; guard <= replace.size(); ++guard) {
    auto it = replace.find(i);
    if (it == replace.end()) return i;
    i = it->second;
  }
  return i;  // a replacement cycle; RebuildModule reports it
}

namespace {

// Clones one computation into `out`, emitting operands before users.
Status RebuildComputation(const HloComputation& c, const ModuleEdits& edits,
                          const std::unordered_map<const HloComputation*, HloComputation*>& comps,
                          HloComputation& out) {
  std::unordered_map<const HloInstruction*, HloInstruction*> cloned;
  auto clone = [&](const HloInstruction& i) {
    std::vector<HloInstruction*> ops;
    for (HloInstruction* op : i.operands()) ops.push_back(cloned.at(edits.Resolve(op)));
    HloInstruction* n = out.AddInstruction(CloneWithOperands(i, i.name(), ops));
    for (hlo::Attribute& a : n->mutable_attributes()) {
      if (auto* refs = std::get_if<hlo::ComputationRefs>(&a.value)) {
        for (HloComputation*& target : refs->computations) target = comps.at(target);
      }
    }
    cloned[&i] = n;
  };
  // Iterative post-order DFS: an instruction is emitted once all its operands are.
  std::unordered_set<const HloInstruction*> on_stack;
  auto emit = [&](HloInstruction* start) -> Status {
    std::vector<std::pair<HloInstruction*, size_t>> stack{{start, 0}};
    on_stack.insert(start);
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      if (next < i->operand_count()) {
        HloInstruction* op = edits.Resolve(i->operand(next++));
        if (cloned.count(op)) continue;
        if (edits.remove.count(op) || edits.replace.count(op) || op->parent() != &c) {
          return Status::Error("%" + i->name() + ": operand %" + op->name() +
                               " was removed or belongs to another computation");
        }
        if (!on_stack.insert(op).second) return Status::Error("cycle through %" + op->name());
        stack.push_back({op, 0});
        continue;
      }
      clone(*i);
      on_stack.erase(i);
      stack.pop_back();
    }
    return Status::Ok();
  };
  for (const auto& i : c.instructions()) {
    if (cloned.count(i.get()) || edits.remove.count(i.get()) || edits.replace.count(i.get())) {
      continue;
    }
    Status s = emit(i.get());
    if (!s.ok()) return s;
  }
  if (c.root()) {
    HloInstruction* root = edits.Resolve(c.root());
    auto it = cloned.find(root);
    if (it == cloned.end()) return Status::Error("root of %" + c.name() + " was removed");
    out.set_root(it->second);
  }
  return Status::Ok();
}

}  // namespace

HloInstruction* CloneBody(const HloComputation& callee, HloComputation& into,
                          const std::function<HloInstruction*(const HloInstruction&)>& param) {
  std::unordered_map<const HloInstruction*, HloInstruction*> now;
  for (const auto& i : callee.instructions()) {
    if (i->opcode() == hlo::Opcode::kParameter) {
      now[i.get()] = param(*i);
      continue;
    }
    std::vector<HloInstruction*> ops;
    for (const HloInstruction* o : i->operands()) ops.push_back(now.at(o));
    now[i.get()] = into.AddInstruction(CloneWithOperands(*i, UniqueName(into, i->name()), ops));
  }
  return now.at(callee.root());
}

void InlineInto(HloComputation& c, HloInstruction& caller, const HloComputation& callee,
                ModuleEdits& edits) {
  std::unordered_map<const HloInstruction*, HloInstruction*> now;
  for (const auto& owned : callee.instructions()) {
    const HloInstruction& i = *owned;
    if (i.opcode() == hlo::Opcode::kParameter) {
      now[&i] = caller.operands().at(static_cast<size_t>(i.parameter_number()));
      continue;
    }
    std::vector<HloInstruction*> ops;
    for (const HloInstruction* o : i.operands()) ops.push_back(now.at(o));
    // The root takes the caller's name (the caller goes), so reports name the same value.
    const std::string name = &i == callee.root() ? caller.name() : UniqueName(c, i.name());
    now[&i] = c.AddInstruction(CloneWithOperands(i, name, ops));
  }
  edits.replace[&caller] = now.at(callee.root());
  edits.remove.insert(&caller);
}

hlo::Result<HloModule> RebuildModule(const HloModule& m, const ModuleEdits& edits) {
  HloModule out;
  out.name = m.name;
  out.replica_count = m.replica_count;
  out.num_partitions = m.num_partitions;
  out.alias_passthrough_params = m.alias_passthrough_params;
  out.entry_computation_layout = m.entry_computation_layout;
  out.input_output_alias = m.input_output_alias;
  out.header = m.header;
  out.stack_frames = m.stack_frames;
  out.spmd_output_sharding = m.spmd_output_sharding;
  out.inferred_batch = m.inferred_batch;
  out.batch_not_split_reason = m.batch_not_split_reason;
  out.spmd_parameters_shardings = m.spmd_parameters_shardings;
  std::vector<const HloComputation*> order;
  for (const auto& c : m.computations()) {
    if (c.get() != m.entry() && !edits.remove_computations.count(c.get())) order.push_back(c.get());
  }
  if (m.entry()) order.push_back(m.entry());
  std::unordered_map<const HloComputation*, HloComputation*> comps;
  for (const HloComputation* c : order) {
    HloComputation* n = out.AddComputation(std::make_unique<HloComputation>(c->name()));
    n->set_entry(c->is_entry());
    n->attributes() = c->attributes();
    comps[c] = n;
  }
  for (const HloComputation* c : order) {
    for (const auto& i : c->instructions()) {
      if (edits.remove.count(i.get())) continue;  // dropped with what it calls
      for (HloComputation* called : i->called_computations()) {
        if (!comps.count(called)) {
          return Status::Error("%" + i->name() + " calls a removed computation");
        }
      }
    }
    Status s = RebuildComputation(*c, edits, comps, *comps.at(c));
    if (!s.ok()) return s;
  }
  if (m.entry()) out.set_entry(comps.at(m.entry()));
  int64_t id = 0;
  for (const auto& c : out.computations()) {
    for (const auto& i : c->instructions()) i->set_id(id++);
  }
  return out;
}

Status ApplyEdits(HloModule& m, const ModuleEdits& edits) {
  hlo::Result<HloModule> r = RebuildModule(m, edits);
  if (!r.ok()) return r.status();
  m = std::move(r).value();
  return Status::Ok();
}

}  // namespace tpusim::passes
