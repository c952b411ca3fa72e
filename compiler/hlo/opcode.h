// HLO opcodes, derived from compiler/hlo/opcodes.def.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tpusim::hlo {

inline constexpr int kVariadic = -1;

enum class OpCategory : uint8_t {
  kSource,
  kDataMovement,
  kElementwiseUnary,
  kElementwiseBinary,
  kElementwiseTernary,
  kReduction,
  kContraction,
  kNormalization,
  kCollective,
  kTuple,
  kControl,
  kUnsupported,
};

enum class Opcode : uint8_t {
#define HLO_OP(e, name, arity, category) e,
#define HLO_UNSUPPORTED(e, name, reason) e,
#include "compiler/hlo/opcodes.def"
  kCount
};

struct OpcodeInfo {
  Opcode opcode;
  std::string_view name;  // XLA spelling, e.g. "dynamic-slice"
  int arity;              // operand count or kVariadic
  OpCategory category;
  std::string_view reason;  // why tpusim rejects it; empty when supported
};

const OpcodeInfo& GetOpcodeInfo(Opcode op);
std::string_view OpcodeName(Opcode op);
std::string_view CategoryName(OpCategory c);
bool IsSupported(Opcode op);
bool IsCollective(Opcode op);  // category kCollective: all-reduce and the others, their pairs
// The asynchronous collectives tpusim runs on the collective stream (async-collective-creator):
// all-reduce-start, all-gather-start and reduce-scatter-start, and their dones.
bool IsAsyncCollectiveStart(Opcode op);
bool IsAsyncCollectiveDone(Opcode op);
// Looks an XLA opcode name up, supported or not.
std::optional<Opcode> LookupOpcode(std::string_view name);

}  // namespace tpusim::hlo
