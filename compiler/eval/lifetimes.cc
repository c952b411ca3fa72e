#include "compiler/eval/lifetimes.h"

namespace tpusim::eval {

Lifetimes PlanLifetimes(const hlo::HloComputation& comp,
                        const std::unordered_map<const hlo::HloInstruction*, size_t>& position) {
  const auto& instrs = comp.instructions();
  const size_t n = instrs.size();
  Lifetimes life{std::vector<size_t>(n), std::vector<bool>(n, false)};
  std::vector<std::vector<size_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    life.last_use[i] = i;
    for (const hlo::HloInstruction* op : instrs[i]->operands()) {
      const size_t j = position.at(op);
      life.last_use[j] = i;
      users[j].push_back(i);
    }
  }
  const size_t root = comp.root() != nullptr ? position.at(comp.root()) : n;
  if (root < n) life.last_use[root] = n;
  auto index_of = [&](size_t i) { return instrs[i]->GetInt("index").value_or(-1); };
  for (size_t j = 0; j < n; ++j) {
    if (j == root || users[j].empty()) continue;
    bool all_gte = true;
    for (size_t u : users[j]) all_gte &= instrs[u]->opcode() == hlo::Opcode::kGetTupleElement;
    if (!all_gte) continue;
    for (size_t u : users[j]) {
      int same = 0;
      for (size_t v : users[j]) same += index_of(v) == index_of(u);
      life.takes_element[u] = same == 1;
    }
  }
  return life;
}

}  // namespace tpusim::eval
