// Program -> assembly text that Assemble() turns back into the same program.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "isa/program.h"

namespace tpusim::isa {

// Prints `.tags` (only when the tag table is not in first-use order), the `.desc` lines,
// then the code: `.tag` lines where the tag changes, `L<index>:` labels at branch
// targets, canonical operands. For every program that passes Validate(),
// Assemble(Disassemble(p)) == p. Invalid operands print as `<bad ...>`, never crash.
std::string Disassemble(const Program& program);

// One instruction's text, e.g. "add r1, r2, r3"; labels print as L<index>.
std::string DisassembleInstr(const Instr& instr, const Program& program);

// An f32 immediate: the shortest %.9g text that parses back to the same bits, inf, -inf,
// nan (the canonical 0x7fc00000 only), otherwise f32:0xXXXXXXXX.
std::string FormatF32(uint32_t bits);

// A double-quoted string literal with \\, \" and \xHH escapes for non-printable bytes.
std::string QuoteString(std::string_view s);

}  // namespace tpusim::isa
