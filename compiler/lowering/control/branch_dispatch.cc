#include "compiler/lowering/control/branch_dispatch.h"

#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {
namespace {

constexpr int kSelectorSmem = 0;  // kernel SMEM, free between kernels

}  // namespace

std::string BranchDispatch(const BranchSelect& s) {
  if (s.branches < 1) throw std::invalid_argument("a conditional without branches");
  std::ostringstream o;
  const std::string word = s.label + "_selector";
  o << "# conditional: pick one of " << s.branches << " branches (branch_dispatch.cc)\n"
    << ".tag \"" << s.tag << "\"\n"
    << ".desc " << word << " rows=1 row_bytes=4 src_stride=0 dst_stride=0\n"
    << "    sflag f14, 0\n"
    << assembly::LoadAddress(1, s.selector, 2) << "    li r3, " << kSelectorSmem << "\n"
    << "    dma.hs r3, r1, " << word << ", f14\n    wait seq, f14, 1\n"
    << "    sld r4, r0, " << kSelectorSmem << "\n";
  if (s.pred) {
    o << "    li r5, 0\n    beq r4, r5, " << s.label << "_b1\n    jmp " << s.label << "_b0\n";
  } else {
    for (int k = 0; k + 1 < s.branches; ++k)
      o << "    li r5, " << k << "\n    beq r4, r5, " << s.label << "_b" << k << "\n";
    o << "    jmp " << s.label << "_b" << s.branches - 1 << "\n";
  }
  return o.str();
}

}  // namespace tpusim::lowering
