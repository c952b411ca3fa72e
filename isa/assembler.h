// The text form of programs: an assembler (docs/isa.md, section Assembly syntax).
//
// One statement per line; `#` and `;` start comments outside strings.
//   label:                      (alone or before a statement; forward references work)
//   mnemonic op, op, ...        operands per the opcode's letters (isa/opcodes.def)
//   .desc NAME rows=R row_bytes=B src_stride=S dst_stride=D
//         [planes=P src_plane_stride=S2 dst_plane_stride=D2]
//   .tag "text"                 provenance tag of the following instructions ("" = none)
//   .tags "a", "b", ...         interns tags in this order without changing the current one
//   .equ NAME value             an integer constant usable wherever an immediate is
// Descriptors and .equ constants must be defined before use; labels may come later.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "isa/error.h"
#include "isa/program.h"

namespace tpusim::isa {

// Assembles `text`; errors read "filename:line:column: message" (column of the
// offending token, 1-based). Never crashes, whatever the input.
Result<Program> Assemble(std::string_view text, std::string_view filename = "<input>");

// The bit pattern of an f32 immediate: decimal or scientific text, inf, -inf, nan
// (0x7fc00000), or f32:0xXXXXXXXX exact bits. nullopt when malformed or out of range.
std::optional<uint32_t> ParseF32(std::string_view text);

}  // namespace tpusim::isa
