// The binary form of instructions and programs (docs/isa.md, section Encoding).
//
// Instruction: 16 bytes, two little-endian uint64 (low word first) forming one 128-bit
// value. Bits 0..7 hold the opcode; the operands follow LSB-first from bit 8, in operand
// order, each OperandBits(kind) wide (32-bit fields hold the int32 bit pattern); every
// remaining bit is zero.
//
// Program (all integers little-endian):
//   "TPUSIM01" or "TPUSIM02"                 magic, 8 bytes
//   u32 num_tags, u32 num_descs, u32 num_instrs
//   u32 collective_entry                     TPUSIM02 only: Program::collective_entry
//   num_tags x    { u32 len, len bytes }     tags[0] must be ""
//   num_descs x   { u32 name_len, name, u32 rows, u32 row_bytes, i64 src_stride,
//                   i64 dst_stride, u32 planes, i64 src_plane_stride, i64 dst_plane_stride }
//   num_instrs x  16-byte instruction
//   num_instrs x  u16 tag index
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "isa/error.h"
#include "isa/program.h"

namespace tpusim::isa {

inline constexpr size_t kInstrBytes = 16;
inline constexpr std::string_view kProgramMagic = "TPUSIM01";   // one instruction stream
inline constexpr std::string_view kProgramMagic2 = "TPUSIM02";  // with a collective stream
inline constexpr size_t kMaxTags = 65536;                       // tag indices are uint16

// Packs one instruction (its tag is not part of the 16 bytes). Operand values are masked
// to their field widths, so encode only programs that pass Validate().
std::array<uint8_t, kInstrBytes> EncodeInstr(const Instr& instr);

// Unpacks 16 bytes (fewer is an error). Checks the opcode, the reserved bits and the
// index ranges that need no program context (registers, flags, units, MXUs); labels and
// descriptors are checked by DecodeProgram. The result has tag 0.
Result<Instr> DecodeInstr(std::span<const uint8_t> bytes);

std::vector<uint8_t> EncodeProgram(const Program& program);

// Parses a program container. Any input is safe: malformed bytes give an Error whose
// offset points at the offending field; memory use is bounded by the input size.
Result<Program> DecodeProgram(std::span<const uint8_t> bytes);

// Checks the invariants DecodeProgram enforces, on an in-memory program: operands in
// range and unused ones zero, labels in [0, code.size()], descriptor indices and tags in
// range, tags[0] == "" and tags distinct, descriptor names distinct identifiers with
// rows, row_bytes and planes >= 1. Returns nullopt for a valid program. A valid program
// survives encode/decode and disassemble/assemble unchanged.
std::optional<Error> Validate(const Program& program);

// [A-Za-z_][A-Za-z0-9_.]*: the spelling of labels, descriptor names and .equ names.
bool IsIdentifier(std::string_view s);

}  // namespace tpusim::isa
