// docs/isa.md, generated from the instruction table (isa/opcodes.def).
#pragma once

#include <string>

namespace tpusim::isa {

// The whole ISA reference in Markdown: operands, instructions per unit (operands,
// semantics, timing class, bit layout), the Timing section from TimingFormula(), the
// binary encoding and the assembly syntax. docs/isa.md must equal this text
// (test/isa/isa_doc_test.cc; regenerate with scripts/gen-isa-doc.sh).
std::string IsaMarkdown();

}  // namespace tpusim::isa
