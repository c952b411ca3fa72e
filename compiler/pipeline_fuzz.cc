// libFuzzer target for the whole compiler on parsed modules: any text either stops with a
// message (parse, verify, a pass, the lowering) or compiles for a v3-8 board into programs
// that assemble. Nothing may crash, trip a sanitizer or produce a program the assembler
// rejects.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/compile.h"
#include "isa/assembler.h"

namespace {

// v3-8 as sim/configs/v3-8.json describes it: 8 cores (a 2x2 torus of 2-core chips),
// 2 MXUs per core, 16 GiB of HBM per core. Kept here: the fuzz target links no simulator.
tpusim::CompileTarget Board() {
  tpusim::CompileTarget t;
  t.lowering.cores = 8;
  t.lowering.mxus_per_core = 2;
  t.lowering.ring = tpusim::collectives::TorusRing(2, 2, 2);
  t.lowering.hbm_bytes = 16ull << 30;
  t.hbm_bytes_per_core =
      static_cast<int64_t>(t.lowering.hbm_bytes - tpusim::lowering::kMailboxBytes);
  t.use_cache = false;
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tpusim::CompileTarget target = Board();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto compiled = tpusim::CompileForBoard(text, "fuzz.hlo", target);
  if (!compiled.ok()) {
    if (compiled.status().message().empty()) __builtin_trap();
    return 0;
  }
  for (const std::string& program : (*compiled)->lowered.programs)
    if (!tpusim::isa::Assemble(program, "fuzz.s").ok()) __builtin_trap();
  return 0;
}
