#include "isa/isa.h"

#include <array>
#include <unordered_map>

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
    case 'r':
      return OperandKind::kSreg;
    case 'v':
      return OperandKind::kVreg;
    case 'f':
      return OperandKind::kFlag;
    case 'u':
      return OperandKind::kUnit;
    case 'm':
      return OperandKind::kMxu;
    case 'i':
      return OperandKind::kImm;
    case 'l':
      return OperandKind::kLabel;
    case 'd':
      return OperandKind::kDesc;
    default:
      return OperandKind::kFimm;  // 'x'
  }
}

const OpInfo& Info(Opcode op) { return kTable[static_cast<int>(op)]; }
std::span<const OpInfo> AllOps() { return kTable; }

std::optional<Opcode> FindMnemonic(std::string_view mnemonic) {
  static const std::unordered_map<std::string_view, Opcode> kByMnemonic = [] {
    std::unordered_map<std::string_view, Opcode> m;
    for (const OpInfo& info : kTable) m.emplace(info.mnemonic, info.opcode);  // first wins
    return m;
  }();
  auto it = kByMnemonic.find(mnemonic);
  if (it == kByMnemonic.end()) return std::nullopt;
  return it->second;
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
  static constexpr std::array<std::string_view, 13> kNames = {
      "scalar-alu",     "scalar-branch", "sync",           "dma-copy", "mxu-load-weights",
      "mxu-matmul",     "mxu-pop",       "vpu-load-store", "vpu-alu",  "vpu-transcendental",
      "vpu-cross-lane", "vpu-transpose", "vpu-loop"};
  return kNames[static_cast<int>(t)];
}

std::string_view TimingFormula(TimingClass t) {
  switch (t) {
    case TimingClass::kScalarAlu:
      return "busy `scalar_cycles`";
    case TimingClass::kScalarBranch:
      return "busy `scalar_cycles` + `branch_penalty_cycles` when taken";
    case TimingClass::kSync:
      return "busy `sync_cycles` once the flag condition holds; time spent waiting for it is a "
             "stall, recorded as a wait, not as busy time";
    case TimingClass::kDmaCopy:
      return "`dma_latency_cycles` + the transfer: the copy moves in chunks of `dma_chunk_bytes`; "
             "each chunk occupies its path (HBM: `hbm_bandwidth_bytes_per_s`, VMEM<->VMEM: "
             "`vmem_dma_bandwidth_bytes_per_s`; dma.hh reads and writes HBM, twice the bytes) "
             "first come first served with other engines' chunks; up to `dma_engines` copies "
             "are in flight; completion adds 1 to the flag";
    case TimingClass::kMxuLoadWeights:
      return "busy `mxu_weight_load_cycles` (128 rows of bf16, one row per cycle); with two "
             "staging buffers it overlaps the matmul using the other buffer, and waits only "
             "while both buffers hold weights not yet consumed";
    case TimingClass::kMxuMatmul:
      return "busy M cycles (one LHS row per cycle, M = rb rows); back-to-back matmuls stream "
             "without bubbles; results reach the accumulators `mxu_fill_drain_cycles` "
             "(= array rows + array cols - 1: the skewed array plus one accumulator write) "
             "after the last row enters";
    case TimingClass::kMxuPop:
      return "busy ceil(M / `mxu_pop_rows_per_cycle`) cycles on the MXU's result path, after "
             "the fill/drain latency of the matmuls that wrote those rows has elapsed; the "
             "queue moves on as soon as the pop is issued, and a later matmul into the same "
             "accumulator rows starts only after the pop has read them";
    case TimingClass::kVpuLoadStore:
      return "busy `vpu_load_store_cycles` per vector register";
    case TimingClass::kVpuAlu:
      return "busy `vpu_alu_cycles` per vector register";
    case TimingClass::kVpuTranscendental:
      return "busy `vpu_transcendental_cycles` per vector register";
    case TimingClass::kVpuCrossLane:
      return "busy `vpu_cross_lane_cycles` per vector register";
    case TimingClass::kVpuTranspose:
      return "busy `vpu_transpose_cycles` per 128x128 block (16 registers)";
    case TimingClass::kVpuLoop:
      return "busy ra times the cycles of one trip: the body software-pipelined over the VLIW "
             "bundle's vector slots, max(ceil(L / `vpu_load_store_slots`), ceil(A / "
             "`vpu_alu_slots`)) with L the body's load/store cycles and A the rest (0 trips: no "
             "time); the values are the body's written out ra times; the sequencer spends one "
             "issue slot on the whole block";
  }
  return "";
}

int OperandBits(OperandKind k) {
  switch (k) {
    case OperandKind::kSreg:
    case OperandKind::kVreg:
    case OperandKind::kFlag:
      return 5;
    case OperandKind::kUnit:
      return 3;
    case OperandKind::kMxu:
      return 2;
    case OperandKind::kDesc:
      return 16;
    default:
      return 32;  // kImm, kLabel, kFimm
  }
}

}  // namespace tpusim::isa
