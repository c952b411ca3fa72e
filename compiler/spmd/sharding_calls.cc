// The sharding annotations' custom-calls: Sharding and xla.sdy.FuncResultSharding constrain a
// value; SPMDFullToShardShape / xla.sdy.GlobalToLocalShape enter a shard_map body with each
// device's shard; SPMDShardToFullShape / xla.sdy.LocalToGlobalShape leave it, the per-device
// results becoming the tiles of a global value.
#include "compiler/spmd/annotations.h"
#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Opcode;
using hlo::Result;
using hlo::Shape;
using hlo::Status;

namespace {

HloSharding Manual() {
  HloSharding s;
  s.kind = HloSharding::Kind::kManual;
  return s;
}

const Shape& ElementShape(const Shape& s, size_t k, size_t count) {
  return count == 1 && !s.IsTuple() ? s : s.tuple_shapes.at(k);
}

}  // namespace

Result<std::optional<Local>> Partitioner::ShardingCall(const HloInstruction& i) {
  const std::string target = CustomCallTarget(i);
  auto fail = [&](const std::string& why) {
    return Status::Error("%" + i.name() + " (custom-call \"" + target + "\"): " + why);
  };
  auto stated_or = [&](const char* sdy_key) -> Result<std::vector<HloSharding>> {
    Result<std::vector<HloSharding>> sdy = SdyShardings(m_, i, sdy_key);
    if (!sdy.ok() || !sdy->empty()) return sdy;
    Result<std::optional<HloSharding>> s = StatedSharding(m_, i);
    if (!s.ok()) return s.status();
    if (!s.value()) return fail("states no sharding");
    const HloSharding& one = **s;
    return one.kind == HloSharding::Kind::kTuple ? one.elements : std::vector<HloSharding>{one};
  };
  if (target == "Sharding" || target == "xla.sdy.FuncResultSharding") {
    Result<std::optional<HloSharding>> s = StatedSharding(m_, i);
    if (!s.ok()) return s.status();
    const Local& in = Of(i.operand(0));
    if (!s.value()) return std::optional<Local>(in);
    Result<HloInstruction*> r = Reshard(in, i.operand(0)->shape(), **s);
    if (!r.ok()) return fail(r.status().message());
    return std::optional<Local>(Local{r.value(), **s});
  }
  if (target == "SPMDFullToShardShape" || target == "xla.sdy.GlobalToLocalShape") {
    std::vector<HloSharding> in;
    if (target == "SPMDFullToShardShape") {
      in = {Of(i.operand(0)).sharding};  // the Sharding call before it says how
    } else {
      Result<std::vector<HloSharding>> r = stated_or("xla.sdy.in_shardings");
      if (!r.ok()) return r.status();
      in = r.value();
    }
    if (in.size() != i.operand_count()) return fail("one sharding per operand expected");
    std::vector<HloInstruction*> parts;
    for (size_t k = 0; k < i.operand_count(); ++k) {
      Result<HloInstruction*> r = Reshard(Of(i.operand(k)), i.operand(k)->shape(), in[k]);
      if (!r.ok()) return fail(r.status().message());
      const Shape& want = ElementShape(i.shape(), k, i.operand_count());
      if (!r.value()->shape().Compatible(want)) {
        return fail("operand " + std::to_string(k) + " sharded " + in[k].ToString() + " is " +
                    r.value()->shape().ToString(false) + " per device, the body takes " +
                    want.ToString(false));
      }
      parts.push_back(r.value());
    }
    HloInstruction* v = parts.size() == 1 && !i.shape().IsTuple()
                            ? parts[0]
                            : Add(i.name(), Opcode::kTuple, i.shape(), parts);
    return std::optional<Local>(Local{v, Manual()});
  }
  if (target == "SPMDShardToFullShape" || target == "xla.sdy.LocalToGlobalShape") {
    Result<std::vector<HloSharding>> out = stated_or("xla.sdy.out_shardings");
    if (!out.ok()) return out.status();
    if (out->size() != i.operand_count()) return fail("one sharding per result expected");
    std::vector<HloInstruction*> parts;
    std::vector<Shape> shapes;
    for (size_t k = 0; k < i.operand_count(); ++k) {
      const Local& l = Of(i.operand(k));
      if (!l.manual()) return fail("operand " + std::to_string(k) + " is not a body's value");
      const Shape& global = ElementShape(i.shape(), k, i.operand_count());
      Result<Shape> local = LocalShape(global, (*out)[k]);
      if (!local.ok()) return fail(local.status().message());
      if (!local->Compatible(l.value->shape())) {
        return fail("result " + std::to_string(k) + " sharded " + (*out)[k].ToString() + " needs " +
                    local->ToString(false) + " per device, the body gives " +
                    l.value->shape().ToString(false));
      }
      parts.push_back(l.value);
      shapes.push_back(l.value->shape());
    }
    if (parts.size() == 1 && !i.shape().IsTuple()) {
      return std::optional<Local>(Local{parts[0], (*out)[0]});
    }
    HloSharding tuple;
    tuple.kind = HloSharding::Kind::kTuple;
    tuple.elements = out.value();
    return std::optional<Local>(
        Local{Add(i.name(), Opcode::kTuple, Shape::Tuple(shapes), parts), tuple});
  }
  return fail("not a sharding annotation tpusim knows");
}

}  // namespace tpusim::spmd
