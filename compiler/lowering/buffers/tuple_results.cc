#include "compiler/lowering/buffers/tuple_results.h"

namespace tpusim::lowering {

bool TupleResultAddresses(const hlo::HloInstruction& instr, const OpContext& c,
                          std::vector<std::optional<uint64_t>>& out) {
  if (!instr.shape().IsTuple()) return out.assign(1, c.address(&instr)), true;
  if (instr.is_root()) return false;
  out.assign(instr.shape().tuple_shapes.size(), std::nullopt);
  for (const auto& u : instr.parent()->instructions())
    for (const hlo::HloInstruction* o : u->operands())
      if (o == &instr) {
        const int64_t k = u->GetInt("index").value_or(-1);
        if (u->opcode() != hlo::Opcode::kGetTupleElement || k < 0 ||
            k >= static_cast<int64_t>(out.size()))
          return false;
        out[static_cast<size_t>(k)] = c.address(u.get());
      }
  return true;
}

}  // namespace tpusim::lowering
