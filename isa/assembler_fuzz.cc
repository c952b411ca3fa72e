// libFuzzer target: arbitrary text must assemble or fail cleanly; whatever assembles must
// survive disassemble/assemble and encode/decode unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/encoding.h"

using namespace tpusim::isa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<Program> p = Assemble(text, "fuzz.s");
  if (!p.ok()) return 0;
  if (Validate(*p)) __builtin_trap();
  Result<Program> again = Assemble(Disassemble(*p), "dis.s");
  if (!again.ok() || !(*again == *p)) __builtin_trap();
  std::vector<uint8_t> bytes = EncodeProgram(*p);
  Result<Program> decoded = DecodeProgram(bytes);
  if (!decoded.ok() || !(*decoded == *p)) __builtin_trap();
  return 0;
}
