// libFuzzer target: any input either fails to parse with a message or parses, prints,
// re-parses and prints identically. Verification must not crash either.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tpusim::hlo::Result<tpusim::hlo::HloModule> m = tpusim::hlo::ParseHlo(text, "fuzz.hlo");
  if (!m.ok()) {
    if (m.status().message().empty()) __builtin_trap();
    return 0;
  }
  (void)tpusim::hlo::VerifyModule(*m);
  std::string printed = tpusim::hlo::PrintModule(*m);
  tpusim::hlo::Result<tpusim::hlo::HloModule> again = tpusim::hlo::ParseHlo(printed, "printed");
  if (!again.ok()) __builtin_trap();
  if (tpusim::hlo::PrintModule(*again) != printed) __builtin_trap();
  return 0;
}
