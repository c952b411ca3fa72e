// All-reduce combining; see all_reduce_combiner.h.
#include "compiler/passes/all_reduce_combiner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

// What must agree for two all-reduces to share a ring: the reduction (its root opcode and
// element type), the groups and the other attributes but the channel, printed.
std::string Key(const HloInstruction& i) {
  std::string key = std::string(hlo::OpcodeName(i.to_apply()->root()->opcode())) + "/" +
                    std::string(hlo::PrimitiveTypeName(i.shape().type)) + ";";
  for (const hlo::Attribute& a : i.attributes()) {
    if (a.key == "channel_id" || a.key == "to_apply" || a.key == "metadata") continue;
    if (const auto* g = std::get_if<hlo::ReplicaGroups>(&a.value)) {
      for (const auto& group : g->groups) {
        key += "{";
        for (int64_t d : group) key += std::to_string(d) + ",";
        key += "}";
      }
    } else if (const auto* r = std::get_if<hlo::RawText>(&a.value)) {
      key += a.key + "=" + r->text;
    } else {
      key += a.key;
    }
    key += ";";
  }
  return key;
}

bool Combinable(const HloInstruction& i) {
  return i.opcode() == Opcode::kAllReduce && i.operand_count() == 1 && i.shape().IsArray() &&
         i.to_apply() && i.to_apply()->root() && i.to_apply()->root()->operand_count() == 2 &&
         i.to_apply()->root()->operand(0)->opcode() == Opcode::kParameter &&
         i.to_apply()->root()->operand(1)->opcode() == Opcode::kParameter;
}

// Which combinable all-reduces a value depends on, one bit per all-reduce.
using Bits = std::vector<uint64_t>;
bool Meet(const Bits& a, const Bits& b) {
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    if (a[k] & b[k]) return true;
  }
  return false;
}

struct Group {
  std::vector<HloInstruction*> members;
  Bits bits;
  int64_t bytes = 0;
};

void Combine(HloComputation& c, const Group& g, ModuleEdits& edits) {
  std::vector<hlo::Shape> shapes;
  std::vector<HloInstruction*> operands;
  for (const HloInstruction* m : g.members) {
    shapes.push_back(m->shape());
    operands.push_back(m->operand(0));
  }
  const HloInstruction& first = *g.members.front();
  HloInstruction* all = AddNew(c, first.name() + ".combined", Opcode::kAllReduce,
                               hlo::Shape::Tuple(shapes), operands);
  all->mutable_attributes() = first.attributes();
  for (size_t k = 0; k < g.members.size(); ++k) {
    HloInstruction* m = g.members[k];
    // Named as the all-reduce it stands for (which goes): buffers and reports keep the name.
    auto gte = std::make_unique<HloInstruction>(m->name(), Opcode::kGetTupleElement, m->shape());
    gte->AddOperand(all);
    HloInstruction* e = c.AddInstruction(std::move(gte));
    e->SetAttr("index", static_cast<int64_t>(k));
    edits.replace[m] = e;
    edits.remove.insert(m);
  }
}

}  // namespace

hlo::Result<bool> AllReduceCombinerPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  for (HloComputation* c : KernelComputations(module)) {
    std::unordered_map<const HloInstruction*, size_t> index;  // of each combinable all-reduce
    for (const auto& i : c->instructions()) {
      if (Combinable(*i)) index.emplace(i.get(), index.size());
    }
    if (index.size() < 2) continue;
    const size_t words = (index.size() + 63) / 64;
    std::unordered_map<const HloInstruction*, Bits> depends;  // the all-reduces each value needs
    std::map<std::string, Group> open;
    auto close = [&](Group& g) {
      if (g.members.size() > 1) Combine(*c, g, edits);
      g = Group{};
    };
    for (const auto& owned : c->instructions()) {
      HloInstruction* i = owned.get();
      Bits bits(words, 0);
      for (const HloInstruction* o : i->operands()) {
        const Bits& ob = depends[o];
        for (size_t k = 0; k < ob.size(); ++k) bits[k] |= ob[k];
      }
      const auto it = index.find(i);
      if (it != index.end()) {
        Group& g = open[Key(*i)];
        const int64_t bytes =
            i->shape().ElementCount() * hlo::PrimitiveTypeBits(i->shape().type) / 8;
        // One that needs a member's result, or would pass the threshold, starts a new group.
        if (!g.members.empty() && (Meet(bits, g.bits) || g.bytes + bytes > threshold_)) close(g);
        g.members.push_back(i);
        g.bits.resize(words, 0);
        g.bits[it->second / 64] |= uint64_t{1} << (it->second % 64);
        g.bytes += bytes;
        bits[it->second / 64] |= uint64_t{1} << (it->second % 64);
      }
      depends[i] = std::move(bits);
    }
    for (auto& [key, g] : open) close(g);
  }
  if (edits.empty()) return false;
  if (hlo::Status s = ApplyEdits(module, edits); !s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
