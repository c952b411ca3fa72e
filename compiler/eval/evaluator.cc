// The interpreter loop, the opcode dispatch table, and the replica rendezvous.
#include "compiler/eval/evaluator.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "compiler/eval/interpreter.h"
#include "compiler/eval/rendezvous.h"
#include "compiler/hlo/parser.h"

namespace tpusim::eval {

namespace {

const OpTable& Table() {
  static const OpTable table = [] {
    OpTable t{};
    RegisterSources(t);
    RegisterElementwise(t);
    RegisterDataMovement(t);
    RegisterGatherScatter(t);
    RegisterSort(t);
    RegisterReductions(t);
    RegisterContractions(t);
    RegisterBatchNorm(t);
    RegisterControl(t);
    RegisterCollectives(t);
    RegisterShardingCalls(t);
    return t;
  }();
  return table;
}

std::vector<Value> Flatten(Value v) {
  if (!v.IsTuple()) return {std::move(v)};
  return std::move(v.elements);
}

}  // namespace

bool IsEvaluatorSupported(hlo::Opcode op) {
  return op == hlo::Opcode::kParameter || Table()[static_cast<size_t>(op)] != nullptr;
}

Status InstrError(const hlo::HloInstruction& instr, const std::string& message) {
  return Status::Error("%" + instr.name() + ": " + message);
}

Interpreter::Interpreter(const hlo::HloModule& module, const EvalOptions& options,
                         int64_t replica_id, int64_t replica_count, Rendezvous* rendezvous)
    : module_(module),
      options_(options),
      replica_id_(replica_id),
      replica_count_(replica_count),
      rendezvous_(rendezvous) {
  for (const auto& comp : module_.computations()) {
    for (size_t i = 0; i < comp->instructions().size(); ++i) {
      local_index_[comp->instructions()[i].get()] = i;
    }
  }
}

const Lifetimes& Interpreter::Plan(const hlo::HloComputation& comp) {
  auto it = lifetimes_.find(&comp);
  if (it == lifetimes_.end())
    it = lifetimes_.emplace(&comp, PlanLifetimes(comp, local_index_)).first;
  return it->second;
}

// Evaluates a tuple or get-tuple-element by moving values nobody reads later instead of
// copying them; false when this instruction must go through its op function.
bool Interpreter::TryMove(const hlo::HloInstruction& instr, size_t i, const Lifetimes& life,
                          std::vector<Value>& values, const std::vector<const Value*>& slots,
                          Value& out) {
  auto owned = [&](size_t j) { return slots[j] == &values[j]; };
  const auto& ops = instr.operands();
  if (instr.opcode() == hlo::Opcode::kTuple) {
    std::vector<Value> elements;
    for (const hlo::HloInstruction* op : ops) {
      const size_t j = local_index_.at(op);
      const bool once = std::count(ops.begin(), ops.end(), op) == 1;
      elements.push_back(owned(j) && once && life.last_use[j] == i ? std::move(values[j])
                                                                   : *slots[j]);
    }
    out = Value::Tuple(std::move(elements));
    return true;
  }
  if (!life.takes_element[i] || ops.size() != 1) return false;
  const size_t j = local_index_.at(ops[0]);
  const int64_t index = instr.GetInt("index").value_or(-1);
  if (!owned(j) || !values[j].IsTuple() || index < 0 ||
      index >= static_cast<int64_t>(values[j].elements.size()))
    return false;
  out = std::move(values[j].elements[static_cast<size_t>(index)]);
  return true;
}

Result<Value> Interpreter::Call(const hlo::HloComputation& comp, std::span<const Value> args) {
  const auto& instrs = comp.instructions();
  const Lifetimes& life = Plan(comp);
  const std::vector<size_t>& last_use = life.last_use;
  // Parameters are read in place from `args`; other values are dropped after their last use.
  std::vector<Value> values(instrs.size());
  std::vector<const Value*> slots(instrs.size(), nullptr);
  std::vector<const Value*> operands;
  for (size_t i = 0; i < instrs.size(); ++i) {
    const hlo::HloInstruction& instr = *instrs[i];
    if (instr.opcode() == hlo::Opcode::kParameter) {
      size_t n = static_cast<size_t>(instr.parameter_number());
      if (n >= args.size()) {
        return InstrError(instr, "parameter " + std::to_string(n) + " but " + comp.name() +
                                     " was given " + std::to_string(args.size()) + " arguments");
      }
      if (!args[n].shape.Compatible(instr.shape())) {
        return InstrError(instr, "expects " + instr.shape().ToString(false) + " but argument " +
                                     std::to_string(n) + " is " + args[n].shape.ToString(false));
      }
      slots[i] = &args[n];
      continue;
    }
    OpFn fn = Table()[static_cast<size_t>(instr.opcode())];
    if (fn == nullptr) {
      return InstrError(
          instr, "the evaluator does not support " + std::string(hlo::OpcodeName(instr.opcode())));
    }
    operands.clear();
    for (const hlo::HloInstruction* op : instr.operands()) {
      operands.push_back(slots[local_index_.at(op)]);
    }
    Value moved;
    Result<Value> r = TryMove(instr, i, life, values, slots, moved)
                          ? Result<Value>(std::move(moved))
                          : fn(instr, operands, *this);
    if (!r.ok()) return r.status();
    if (!r->shape.Compatible(instr.shape())) {
      return InstrError(instr, "evaluated to " + r->shape.ToString(false) + " but the shape is " +
                                   instr.shape().ToString(false));
    }
    values[i] = std::move(*r);
    slots[i] = &values[i];
    for (const hlo::HloInstruction* op : instr.operands()) {
      const size_t j = local_index_.at(op);
      if (last_use[j] == i) values[j] = Value();
    }
    if (last_use[i] == i) values[i] = Value();  // never used
  }
  if (comp.root() == nullptr) return Status::Error(comp.name() + " has no root");
  const size_t root = local_index_.at(comp.root());
  if (slots[root] != &values[root]) return *slots[root];  // a parameter
  return std::move(values[root]);
}

Status Interpreter::CallScalar(const hlo::HloComputation& comp, std::span<const double> args,
                               std::span<const PrimitiveType> types, std::span<double> results) {
  auto it = scalar_.find(&comp);
  if (it == scalar_.end()) it = scalar_.emplace(&comp, ScalarProgram::Build(comp)).first;
  if (it->second != nullptr && it->second->num_results() == results.size() &&
      it->second->num_parameters() <= args.size())
    return it->second->Run(args, results);
  const hlo::HloInstruction* root = comp.root();
  std::vector<Value> values;
  for (size_t i = 0; i < args.size(); ++i) values.push_back(Value::Scalar(types[i], args[i]));
  Result<Value> r = Call(comp, values);
  if (!r.ok()) return r.status();
  std::vector<Value> flat = Flatten(std::move(*r));
  if (flat.size() != results.size())
    return InstrError(*root, "gives " + std::to_string(flat.size()) + " results where " +
                                 std::to_string(results.size()) + " are expected");
  for (size_t i = 0; i < flat.size(); ++i) results[i] = flat[i].data.at(0);
  return Status::Ok();
}

Result<std::vector<double>> Interpreter::CallScalar(const hlo::HloComputation& comp,
                                                    std::span<const double> args,
                                                    std::span<const PrimitiveType> types) {
  const hlo::HloInstruction* root = comp.root();
  const size_t n = root->shape().IsTuple() ? root->shape().tuple_shapes.size() : 1;
  std::vector<double> out(n);
  Status s = CallScalar(comp, args, types, out);
  if (!s.ok()) return s;
  return out;
}

Result<Exchanged> Interpreter::Exchange(const hlo::HloInstruction& instr, Value v) {
  if (rendezvous_ == nullptr) {
    std::vector<Value> mine;
    mine.push_back(std::move(v));
    return Exchanged(std::make_shared<const std::vector<Value>>(std::move(mine)));
  }
  Result<Exchanged> r = rendezvous_->Exchange(replica_id_, instr.name(), std::move(v));
  if (!r.ok()) return InstrError(instr, r.status().message());
  return r;
}

namespace {

Result<Value> RunReplica(const hlo::HloModule& module, const std::vector<Value>& args,
                         const EvalOptions& options, int64_t id, int64_t n, Rendezvous* rv) {
  const hlo::HloComputation* entry = module.entry();
  if (entry == nullptr) return Status::Error("the module has no entry computation");
  if (args.size() != entry->parameters().size()) {
    return Status::Error(entry->name() + " takes " + std::to_string(entry->parameters().size()) +
                         " arguments but was given " + std::to_string(args.size()));
  }
  try {
    Interpreter interp(module, options, id, n, rv);
    return interp.Call(*entry, args);
  } catch (const std::exception& e) {
    return Status::Error(std::string("evaluator failure: ") + e.what());
  }
}

}  // namespace

Result<std::vector<Value>> Evaluate(const hlo::HloModule& module, const std::vector<Value>& args,
                                    const EvalOptions& options) {
  Result<Value> r = RunReplica(module, args, options, 0, 1, nullptr);
  if (!r.ok()) return r.status();
  return Flatten(std::move(*r));
}

Result<std::vector<Value>> EvaluateMirrored(const hlo::HloModule& module,
                                            const std::vector<Value>& args, int64_t replicas,
                                            const EvalOptions& options) {
  if (replicas < 1) return Status::Error("EvaluateMirrored needs at least one replica");
  if (std::optional<std::string> why = MirrorObstacle(module, replicas))
    return Status::Error("replicas cannot be mirrored: " + *why);
  // No rendezvous: Exchange hands back this replica's value alone, which stands for all.
  Result<Value> r = RunReplica(module, args, options, 0, replicas, nullptr);
  if (!r.ok()) return r.status();
  return Flatten(std::move(*r));
}

Result<std::vector<Value>> EvaluateText(std::string_view hlo_text, const std::vector<Value>& args,
                                        const EvalOptions& options) {
  Result<hlo::HloModule> m = hlo::ParseHlo(hlo_text, "<eval>");
  if (!m.ok()) return m.status();
  return Evaluate(*m, args, options);
}

Result<std::vector<std::vector<Value>>> EvaluateReplicated(
    const hlo::HloModule& module, const std::vector<std::vector<Value>>& per_replica_args,
    const EvalOptions& options) {
  int64_t n = static_cast<int64_t>(per_replica_args.size());
  if (n == 0) return Status::Error("EvaluateReplicated needs at least one replica");
  Rendezvous rv(n);
  std::vector<Result<Value>> results(n, Result<Value>(Value()));
  std::vector<std::thread> threads;
  for (int64_t id = 0; id < n; ++id) {
    threads.emplace_back([&, id] {
      results[id] = RunReplica(module, per_replica_args[id], options, id, n, &rv);
      if (results[id].ok()) {
        rv.Finish();
      } else {
        rv.Abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Report the replica that failed first, not those that gave up waiting for it.
  for (int64_t id = 0; id < n; ++id) {
    if (!results[id].ok() && results[id].status().message().find(kGaveUp) == std::string::npos) {
      return Status::Error("replica " + std::to_string(id) + ": " + results[id].status().message());
    }
  }
  std::vector<std::vector<Value>> out;
  for (int64_t id = 0; id < n; ++id) {
    if (!results[id].ok()) {
      return Status::Error("replica " + std::to_string(id) + ": " + results[id].status().message());
    }
    out.push_back(Flatten(std::move(*results[id])));
  }
  return out;
}

}  // namespace tpusim::eval
