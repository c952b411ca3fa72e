// The instruction set's vocabulary, derived from isa/opcodes.def: opcodes, units,
// timing classes and operand kinds. Depends on nothing else of tpusim.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tpusim::isa {

enum class Opcode : uint8_t {
#define OP(e, m, u, t, ops, doc) e,
#include "isa/opcodes.def"
#undef OP
  kCount
};
inline constexpr int kNumOpcodes = static_cast<int>(Opcode::kCount);

// The in-order queues of a TensorCore. kByOperand marks an instruction whose unit is
// named by its u or m operand (see ExecUnit()).
enum class Unit : uint8_t { kScalar, kDma, kMxu0, kMxu1, kMxu2, kMxu3, kVpu, kByOperand };
inline constexpr int kNumUnits = 7;  // kScalar..kVpu

enum class TimingClass : uint8_t {
  kScalarAlu,
  kScalarBranch,
  kSync,
  kDmaCopy,
  kMxuLoadWeights,
  kMxuMatmul,
  kMxuPop,
  kVpuLoadStore,
  kVpuAlu,
  kVpuTranscendental,
  kVpuCrossLane,
  kVpuTranspose,
  kVpuLoop,
};

enum class OperandKind : uint8_t { kSreg, kVreg, kFlag, kUnit, kMxu, kImm, kLabel, kDesc, kFimm };

inline constexpr int kMaxOperands = 4;
inline constexpr int kNumSregs = 32;
inline constexpr int kNumVregs = 32;
inline constexpr int kNumFlags = 32;
// `window 1, base` gives the instructions issued after it a second bank of flags f0..f15
// and f30 (a kernel's own flags and its drain barrier), so that two kernels can be in
// flight at once, each with its own. The other flags (collectives', the start flag) are
// one per core in both banks.
inline constexpr int kWindowBanks = 2;
inline constexpr int kBankedFlags = 16, kBankedBarrierFlag = 30;
inline constexpr int kPhysicalFlags = kNumFlags * kWindowBanks;
// The flag storage `f` names under window bank `bank`.
constexpr int BankedFlag(int f, int bank) {
  return bank != 0 && (f < kBankedFlags || f == kBankedBarrierFlag) ? f + kNumFlags * bank : f;
}
inline constexpr int kMaxMxus = 4;
inline constexpr int kMaxDescriptors = 65536;  // a whole lowered model in one program

struct OpInfo {
  Opcode opcode;
  std::string_view mnemonic;
  Unit unit;
  TimingClass timing;
  std::string_view operand_letters;  // see opcodes.def
  std::string_view semantics;
  int num_operands() const { return static_cast<int>(operand_letters.size()); }
  OperandKind operand(int i) const;
};

const OpInfo& Info(Opcode op);
std::span<const OpInfo> AllOps();
std::optional<Opcode> FindMnemonic(std::string_view mnemonic);

std::string_view UnitName(Unit u);  // "seq", "dma", "mxu0".."mxu3", "vpu"
std::optional<Unit> FindUnit(std::string_view name);
std::string_view TimingClassName(TimingClass t);
// The timing formula of a class, in words and config keys (docs/isa.md, section Timing).
std::string_view TimingFormula(TimingClass t);
// Bits an operand of this kind takes in the binary encoding.
int OperandBits(OperandKind k);

}  // namespace tpusim::isa
