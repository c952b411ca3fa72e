#include "compiler/hlo/opcode.h"

#include <array>

namespace tpusim::hlo {
namespace {

constexpr std::array<OpcodeInfo, static_cast<size_t>(Opcode::kCount)> kInfos = {{
#define HLO_OP(e, name, arity, category) {Opcode::e, name, arity, OpCategory::category, ""},
#define HLO_UNSUPPORTED(e, name, reason) \
  {Opcode::e, name, kVariadic, OpCategory::kUnsupported, reason},
#include "compiler/hlo/opcodes.def"
}};

}  // namespace

const OpcodeInfo& GetOpcodeInfo(Opcode op) { return kInfos[static_cast<size_t>(op)]; }
std::string_view OpcodeName(Opcode op) { return GetOpcodeInfo(op).name; }
bool IsSupported(Opcode op) { return GetOpcodeInfo(op).category != OpCategory::kUnsupported; }
bool IsCollective(Opcode op) { return GetOpcodeInfo(op).category == OpCategory::kCollective; }
bool IsAsyncCollectiveStart(Opcode op) {
  return op == Opcode::kAllReduceStart || op == Opcode::kAllGatherStart ||
         op == Opcode::kReduceScatterStart;
}
bool IsAsyncCollectiveDone(Opcode op) {
  return op == Opcode::kAllReduceDone || op == Opcode::kAllGatherDone ||
         op == Opcode::kReduceScatterDone;
}

std::string_view CategoryName(OpCategory c) {
  switch (c) {
    case OpCategory::kSource:
      return "source";
    case OpCategory::kDataMovement:
      return "data movement";
    case OpCategory::kElementwiseUnary:
      return "elementwise unary";
    case OpCategory::kElementwiseBinary:
      return "elementwise binary";
    case OpCategory::kElementwiseTernary:
      return "elementwise ternary";
    case OpCategory::kReduction:
      return "reduction";
    case OpCategory::kContraction:
      return "contraction";
    case OpCategory::kNormalization:
      return "normalization";
    case OpCategory::kCollective:
      return "collective";
    case OpCategory::kTuple:
      return "tuple";
    case OpCategory::kControl:
      return "control";
    case OpCategory::kUnsupported:
      return "unsupported";
  }
  return "?";
}

std::optional<Opcode> LookupOpcode(std::string_view name) {
  for (const OpcodeInfo& info : kInfos) {
    if (info.name == name) return info.opcode;
  }
  return std::nullopt;
}

}  // namespace tpusim::hlo
