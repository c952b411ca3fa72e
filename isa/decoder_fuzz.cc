// libFuzzer target: arbitrary bytes must decode or fail cleanly; whatever decodes must
// re-encode bit for bit, also after a trip through assembly text.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/encoding.h"

using namespace tpusim::isa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  Result<Program> p = DecodeProgram(bytes);
  if (!p.ok()) return 0;
  if (Validate(*p)) __builtin_trap();
  std::vector<uint8_t> again = EncodeProgram(*p);
  if (!std::equal(again.begin(), again.end(), bytes.begin(), bytes.end())) __builtin_trap();
  Result<Program> text = Assemble(Disassemble(*p), "dis.s");
  if (!text.ok() || !(*text == *p)) __builtin_trap();
  if (EncodeProgram(*text) != again) __builtin_trap();
  return 0;
}
