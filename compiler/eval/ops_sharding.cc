// The sharding annotations of a global program, as the devices that run it see them:
// Sharding and FuncResultSharding pass their operand through; entering a shard_map body
// (xla.sdy.GlobalToLocalShape, SPMDFullToShardShape) takes this device's tile (the
// evaluator's replica is the device); leaving it (xla.sdy.LocalToGlobalShape,
// SPMDShardToFullShape) puts every device's result together.
#include "compiler/eval/interpreter.h"
#include "compiler/eval/rendezvous.h"
#include "compiler/spmd/annotations.h"
#include "compiler/spmd/tiles.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::HloSharding;

// The layout of each operand (entering) or result (leaving).
Result<std::vector<HloSharding>> Layouts(const HloInstruction& instr, Interpreter& interp,
                                         const char* sdy_key) {
  Result<std::vector<HloSharding>> sdy = spmd::SdyShardings(interp.module(), instr, sdy_key);
  if (!sdy.ok() || !sdy->empty()) return sdy;
  const HloInstruction& source =
      spmd::CustomCallTarget(instr) == "SPMDFullToShardShape" ? *instr.operand(0) : instr;
  Result<std::optional<HloSharding>> s = spmd::StatedSharding(interp.module(), source);
  if (!s.ok()) return s.status();
  if (!s.value()) return InstrError(instr, "states no sharding");
  if ((*s)->kind == HloSharding::Kind::kTuple) return (*s)->elements;
  return std::vector<HloSharding>{**s};
}

const hlo::Shape& Element(const hlo::Shape& s, size_t k) {
  return s.IsTuple() ? s.tuple_shapes.at(k) : s;
}

Result<Value> ShardingCall(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  const std::string target = spmd::CustomCallTarget(instr);
  if (target == "Sharding" || target == "xla.sdy.FuncResultSharding") return *ops[0];
  const bool enter = target == "xla.sdy.GlobalToLocalShape" || target == "SPMDFullToShardShape";
  const bool leave = target == "xla.sdy.LocalToGlobalShape" || target == "SPMDShardToFullShape";
  if (!enter && !leave) return InstrError(instr, "custom-call \"" + target + "\" has no model");
  Result<std::vector<HloSharding>> layouts =
      Layouts(instr, interp, enter ? "xla.sdy.in_shardings" : "xla.sdy.out_shardings");
  if (!layouts.ok()) return layouts.status();
  if (layouts->size() != ops.size()) return InstrError(instr, "one sharding per operand expected");
  std::vector<Value> out;
  if (enter) {
    for (size_t k = 0; k < ops.size(); ++k) {
      out.push_back(spmd::TileOf(*ops[k], (*layouts)[k], interp.replica_id()));
    }
  } else {
    std::vector<Value> mine;
    for (const Value* v : ops) mine.push_back(*v);
    Result<Exchanged> all = interp.Exchange(instr, Value::Tuple(std::move(mine)));
    if (!all.ok()) return all.status();
    for (size_t k = 0; k < ops.size(); ++k) {
      Value global = Value::Zeros(Element(instr.shape(), k));
      for (size_t d = 0; d < (*all)->size(); ++d) {
        spmd::PutTile(global, (**all)[d].elements.at(k), (*layouts)[k], static_cast<int64_t>(d));
      }
      out.push_back(std::move(global));
    }
  }
  if (out.size() == 1 && !instr.shape().IsTuple()) return std::move(out[0]);
  return Value::Tuple(std::move(out));
}

}  // namespace

void RegisterShardingCalls(OpTable& t) {
  t[static_cast<size_t>(hlo::Opcode::kCustomCall)] = ShardingCall;
}

}  // namespace tpusim::eval
