#include "compiler/hlo/verifier.h"

#include <set>

#include "compiler/hlo/verify/verifier_impl.h"

namespace tpusim::hlo {
namespace verify {

Status ExpectShape(const HloInstruction& i, const Shape& want) {
  if (i.shape().Compatible(want)) return Status::Ok();
  return Error(i, "result shape is " + Str(i.shape()) + " but should be " + Str(want));
}

Status ExpectArrayOperands(const HloInstruction& i) {
  for (size_t k = 0; k < i.operand_count(); ++k) {
    if (i.operand(k)->shape().IsTuple()) {
      return Error(i, "operand " + Str(k) + " (%" + i.operand(k)->name() + ") is a tuple " +
                          Str(i.operand(k)->shape()) + "; expected an array");
    }
  }
  return Status::Ok();
}

Status ExpectDims(const HloInstruction& i, const IntList& dims, int64_t rank,
                  const std::string& what) {
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return Error(i, what + " " + Str(d) + " is out of range for rank " + Str(rank));
    }
    if (!seen.insert(d).second) return Error(i, what + " " + Str(d) + " appears twice");
  }
  return Status::Ok();
}

Status RequireIntList(const HloInstruction& i, const char* key, const IntList** out) {
  *out = i.GetIntList(key);
  if (!*out) return Error(i, std::string("missing attribute ") + key + "={...}");
  return Status::Ok();
}

Status ExpectSignature(const HloInstruction& i, const HloComputation* c, const char* role,
                       const std::vector<Shape>& params, const Shape* root) {
  if (!c) return Error(i, std::string("missing ") + role + "=%computation");
  std::vector<HloInstruction*> ps = c->parameters();
  if (ps.size() != params.size()) {
    return Error(i, std::string(role) + " %" + c->name() + " takes " + Str(ps.size()) +
                        " parameters but is given " + Str(params.size()));
  }
  for (size_t k = 0; k < ps.size(); ++k) {
    if (!ps[k]->shape().Compatible(params[k])) {
      return Error(i, std::string(role) + " %" + c->name() + " parameter " + Str(k) + " is " +
                          Str(ps[k]->shape()) + " but is given " + Str(params[k]));
    }
  }
  if (root && c->root() && !c->root()->shape().Compatible(*root)) {
    return Error(i, std::string(role) + " %" + c->name() + " returns " + Str(c->root()->shape()) +
                        " but should return " + Str(*root));
  }
  return Status::Ok();
}

}  // namespace verify

namespace {

using namespace verify;  // NOLINT

Status VerifyComputation(const HloModule& m, const HloComputation& c) {
  std::set<int64_t> params;
  for (const auto& owned : c.instructions()) {
    const HloInstruction& i = *owned;
    const OpcodeInfo& info = GetOpcodeInfo(i.opcode());
    if (!IsSupported(i.opcode())) return Error(i, "unsupported op " + std::string(info.name));
    if (info.arity != kVariadic && static_cast<int>(i.operand_count()) != info.arity) {
      return Error(i, std::string(info.name) + " takes " + Str(info.arity) + " operands but has " +
                          Str(i.operand_count()));
    }
    for (const HloInstruction* op : i.operands()) {
      if (!op || op->parent() != &c) return Error(i, "operand from another computation");
    }
    if (i.opcode() == Opcode::kParameter && !params.insert(i.parameter_number()).second) {
      return Error(i, "parameter number " + Str(i.parameter_number()) + " is used twice");
    }
    Status s;
    switch (info.category) {
      case OpCategory::kElementwiseUnary:
      case OpCategory::kElementwiseBinary:
      case OpCategory::kElementwiseTernary:
        s = VerifyElementwise(m, i);
        break;
      case OpCategory::kSource:
      case OpCategory::kDataMovement:
        s = VerifyDataMovement(m, i);
        break;
      case OpCategory::kContraction:
      case OpCategory::kNormalization:
        s = VerifyContraction(m, i);
        break;
      case OpCategory::kReduction:
        s = VerifyReduction(m, i);
        break;
      case OpCategory::kCollective:
        s = VerifyCollective(m, i);
        break;
      case OpCategory::kTuple:
      case OpCategory::kControl:
        s = VerifyControl(m, i);
        break;
      case OpCategory::kUnsupported:
        break;
    }
    HLO_RETURN_IF_ERROR(s);
  }
  if (!params.empty() && (*params.rbegin() != static_cast<int64_t>(params.size()) - 1)) {
    return Status::Error("computation %" + c.name() + ": parameter numbers are not 0.." +
                         Str(params.size() - 1));
  }
  if (!c.root()) return Status::Error("computation %" + c.name() + " has no root");
  return Status::Ok();
}

}  // namespace

Status VerifyModule(const HloModule& m) {
  if (!m.entry()) return Status::Error("module " + m.name + " has no ENTRY computation");
  for (const auto& c : m.computations()) HLO_RETURN_IF_ERROR(VerifyComputation(m, *c));
  return Status::Ok();
}

}  // namespace tpusim::hlo
