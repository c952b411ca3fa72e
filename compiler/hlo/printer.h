// Prints HLO in XLA's text format. parse(print(m)) prints the same text again.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"

namespace tpusim::hlo {

std::string PrintModule(const HloModule& module);
std::string PrintComputation(const HloComputation& computation);
// One instruction line without indentation or ROOT, e.g. "%x = f32[2]{0} add(...)".
std::string PrintInstruction(const HloInstruction& instr);
std::string PrintAttrValue(const AttrValue& value);
std::string PrintLiteral(const Shape& shape, const Literal& literal);
std::string FormatDouble(double v);  // shortest text that reads back to the same double

}  // namespace tpusim::hlo
