#include "isa/isa.h"

#include <array>

namespace tpusim::isa {
namespace {

constexpr std::array<OpInfo, kNumOpcodes> kTable = {{
#define OP(e, m, u, t, ops, doc) {Opcode::e, m, Unit::u, TimingClass::t, ops, doc},
#include "isa/opcodes.def"
#undef OP
}};

constexpr std::array<std::string_view, kNumUnits> kUnitNames = {"seq",  "dma",  "mxu0", "mxu1",
                                                                 "mxu2", "mxu3", "vpu"};
}  // namespace

OperandKind OpInfo::operand(int i) const {
  switch (operand_letters[i]) {
    case 'r': return OperandKind::kSreg;
    case 'v': return OperandKind::kVreg;
    case 'f': return OperandKind::kFlag;
    case 'u': return OperandKind::kUnit;
    case 'm': return OperandKind::kMxu;
    case 'i': return OperandKind::kImm;
    case 'l': return OperandKind::kLabel;
    case 'd': return OperandKind::kDesc;
    default: return OperandKind::kFimm;  // 'x'
  }
}

const OpInfo& Info(Opcode op) { return kTable[static_cast<int>(op)]; }
std::span<const OpInfo> AllOps() { return kTable; }

std::optional<Opcode> FindMnemonic(std::string_view mnemonic) {
  for (const OpInfo& info : kTable)
    if (info.mnemonic == mnemonic) return info.opcode;
  return std::nullopt;
}

std::string_view UnitName(Unit u) {
  int i = static_cast<int>(u);
  return i < kNumUnits ? kUnitNames[i] : "by-operand";
}

std::optional<Unit> FindUnit(std::string_view name) {
  for (int i = 0; i < kNumUnits; ++i)
    if (kUnitNames[i] == name) return static_cast<Unit>(i);
  return std::nullopt;
}

std::string_view TimingClassName(TimingClass t) {
  static constexpr std::array<std::string_view, 12> kNames = {
      "scalar-alu", "scalar-branch", "sync", "dma-copy", "mxu-load-weights", "mxu-matmul",
      "mxu-pop", "vpu-load-store", "vpu-alu", "vpu-transcendental", "vpu-cross-lane",
      "vpu-transpose"};
  return kNames[static_cast<int>(t)];
}

int OperandBits(OperandKind k) {
  switch (k) {
    case OperandKind::kSreg:
    case OperandKind::kVreg:
    case OperandKind::kFlag: return 5;
    case OperandKind::kUnit: return 3;
    case OperandKind::kMxu: return 2;
    case OperandKind::kDesc: return 8;
    default: return 32;  // kImm, kLabel, kFimm
  }
}

}  // namespace tpusim::isa
