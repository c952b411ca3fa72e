#include "compiler/hlo/ir.h"

#include <algorithm>
#include <unordered_map>

namespace tpusim::hlo {

bool HloInstruction::is_root() const { return parent_ && parent_->root() == this; }

const Attribute* HloInstruction::FindAttr(std::string_view key) const {
  for (const Attribute& a : attrs_) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

void HloInstruction::SetAttr(std::string key, AttrValue value) {
  for (Attribute& a : attrs_) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  attrs_.push_back(Attribute{std::move(key), std::move(value)});
}

std::optional<int64_t> HloInstruction::GetInt(std::string_view key) const {
  const int64_t* v = Get<int64_t>(key);
  return v ? std::optional<int64_t>(*v) : std::nullopt;
}

std::optional<double> HloInstruction::GetFloat(std::string_view key) const {
  if (const double* v = Get<double>(key)) return *v;
  if (const int64_t* v = Get<int64_t>(key)) return static_cast<double>(*v);
  return std::nullopt;
}

std::optional<std::string> HloInstruction::GetWord(std::string_view key) const {
  const Word* w = Get<Word>(key);
  return w ? std::optional<std::string>(w->text) : std::nullopt;
}

const std::string* HloInstruction::RawAttr(std::string_view key) const {
  const RawText* r = Get<RawText>(key);
  return r ? &r->text : nullptr;
}

HloComputation* HloInstruction::CalledComputation(std::string_view key) const {
  const ComputationRefs* refs = Get<ComputationRefs>(key);
  if (!refs || refs->computations.empty()) return nullptr;
  return refs->computations.front();
}

std::vector<HloComputation*> HloInstruction::branch_computations() const {
  if (const ComputationRefs* refs = Get<ComputationRefs>("branch_computations")) {
    return refs->computations;
  }
  std::vector<HloComputation*> out;
  if (HloComputation* t = CalledComputation("true_computation")) out.push_back(t);
  if (HloComputation* f = CalledComputation("false_computation")) out.push_back(f);
  return out;
}

std::vector<HloComputation*> HloInstruction::called_computations() const {
  std::vector<HloComputation*> out;
  for (const Attribute& a : attrs_) {
    if (const auto* refs = std::get_if<ComputationRefs>(&a.value)) {
      out.insert(out.end(), refs->computations.begin(), refs->computations.end());
    }
  }
  return out;
}

HloInstruction* HloComputation::AddInstruction(std::unique_ptr<HloInstruction> instr) {
  instr->set_parent(this);
  instrs_.push_back(std::move(instr));
  by_name_.emplace(instrs_.back()->name(), instrs_.back().get());
  return instrs_.back().get();
}

bool HloComputation::Reorder(const std::vector<HloInstruction*>& order) {
  if (order.size() != instrs_.size()) return false;
  std::unordered_map<const HloInstruction*, size_t> at;
  for (size_t k = 0; k < instrs_.size(); ++k) at[instrs_[k].get()] = k;
  std::vector<size_t> from(order.size());
  std::vector<bool> taken(instrs_.size(), false);
  for (size_t k = 0; k < order.size(); ++k) {
    auto it = at.find(order[k]);
    if (it == at.end() || taken[it->second]) return false;  // a stranger or a repeat
    taken[it->second] = true, from[k] = it->second;
  }
  std::vector<std::unique_ptr<HloInstruction>> next(instrs_.size());
  for (size_t k = 0; k < order.size(); ++k) next[k] = std::move(instrs_[from[k]]);
  instrs_ = std::move(next);
  return true;
}

std::vector<HloInstruction*> HloComputation::parameters() const {
  std::vector<HloInstruction*> out;
  for (const auto& i : instrs_) {
    if (i->opcode() == Opcode::kParameter) out.push_back(i.get());
  }
  std::stable_sort(out.begin(), out.end(), [](const HloInstruction* a, const HloInstruction* b) {
    return a->parameter_number() < b->parameter_number();
  });
  return out;
}

HloInstruction* HloComputation::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

HloComputation* HloModule::AddComputation(std::unique_ptr<HloComputation> c) {
  comps_.push_back(std::move(c));
  return comps_.back().get();
}

HloComputation* HloModule::Find(std::string_view name) const {
  for (const auto& c : comps_) {
    if (c->name() == name) return c.get();
  }
  return nullptr;
}

size_t HloModule::instruction_count() const {
  size_t n = 0;
  for (const auto& c : comps_) n += c->instructions().size();
  return n;
}

}  // namespace tpusim::hlo
