// Module structure of the HLO parser: header, computations, instructions, operands.
#include "compiler/hlo/parse/parser_impl.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/sharding.h"

namespace tpusim::hlo {

Result<HloModule> ParseHlo(std::string_view text, std::string_view filename) {
  return internal::Parser(text, filename).Run();
}

namespace internal {

Result<HloModule> Parser::Run() {
  if (!ParseModule() || !ResolveComputations()) {
    if (error_.ok()) Fail(pos_, "internal parser error");
    return error_;
  }
  return std::move(module_);
}

bool Parser::ParseModule() {
  if (!TryKeyword("HloModule")) return FailHere("expected 'HloModule' at the start of the module");
  if (!ParseName(&module_.name, "the module name")) return false;
  while (TryEat(',')) {
    if (!ParseHeaderAttr()) return false;
  }
  size_t tables_pos = (SkipSpace(), pos_);
  while (AtStackFrameTable()) {
    if (!ParseStackFrameTable()) return false;
  }
  if (!CheckStackFrames(tables_pos)) return false;
  while (Peek() != '\0') {
    if (!ParseComputation()) return false;
  }
  if (module_.computations().empty()) return FailHere("the module has no computations");
  if (!module_.entry()) {
    module_.set_entry(module_.computations().back().get());
    module_.entry()->set_entry(true);
  }
  return true;
}

bool Parser::ParseHeaderAttr() {
  size_t key_pos = (SkipSpace(), pos_);
  std::string key;
  if (!ParseIdent(&key, "a module attribute name") || !Expect('=', "after " + key)) return false;
  if (key == "replica_count" || key == "num_partitions") {
    int64_t v;
    size_t vpos = (SkipSpace(), pos_);
    if (!ParseInt(&v, "for " + key)) return false;
    if (v < 1) return Fail(vpos, key + " must be at least 1");
    (key == "replica_count" ? module_.replica_count : module_.num_partitions) = v;
    module_.header.push_back({key, v});
    return true;
  }
  std::string raw;
  if (!CaptureRaw(&raw)) return false;
  if (key == "alias_passthrough_params") {
    if (raw != "true" && raw != "false") return Fail(key_pos, key + " must be true or false");
    module_.alias_passthrough_params = raw == "true";
  }
  auto strip = [](const std::string& s) {
    return s.size() >= 2 && s.front() == '{' ? s.substr(1, s.size() - 2) : s;
  };
  if (key == "entry_computation_layout") module_.entry_computation_layout = strip(raw);
  if (key == "input_output_alias") module_.input_output_alias = strip(raw);
  module_.header.push_back({key, RawText{raw}});
  return true;
}

bool Parser::ParseComputation() {
  size_t start = (SkipSpace(), pos_);
  bool entry = TryKeyword("ENTRY");
  std::string name;
  size_t name_pos = (SkipSpace(), pos_);
  if (!ParseName(&name, "a computation name")) return false;
  if (module_.Find(name)) return Fail(name_pos, "duplicate computation name '%" + name + "'");
  if (Peek() == '(') {  // signature; the instructions are the truth, so it is skipped
    if (!CaptureBalanced(pos_)) return false;
    if (!TryEat('-') || PeekRaw() != '>') return FailHere("expected '->' after the parameters");
    ++pos_;
    Shape ignored;
    if (!ParseShape(&ignored)) return false;
  }
  if (!Expect('{', "to start computation %" + name)) return false;
  auto owned = std::make_unique<HloComputation>(name);
  HloComputation* comp = module_.AddComputation(std::move(owned));
  comp_pos_[comp] = name_pos;
  if (entry) {
    if (module_.entry()) return Fail(start, "more than one ENTRY computation");
    comp->set_entry(true);
    module_.set_entry(comp);
  }
  names_.clear();
  while (!TryEat('}')) {
    if (Peek() == '\0') return Fail(start, "computation %" + name + " is missing its '}'");
    if (!ParseInstruction(comp)) return false;
  }
  if (comp->instructions().empty()) return Fail(name_pos, "computation %" + name + " is empty");
  if (!comp->root()) comp->set_root(comp->instructions().back().get());
  while (TryEat(',')) {  // e.g. execution_thread="host"
    std::string key, raw;
    if (!ParseIdent(&key, "a computation attribute") || !Expect('=', "after " + key) ||
        !CaptureRaw(&raw)) {
      return false;
    }
    comp->attributes().push_back({key, RawText{raw}});
  }
  return true;
}

bool Parser::ParseInstruction(HloComputation* comp) {
  size_t start = (SkipSpace(), pos_);
  bool root = TryKeyword("ROOT");
  size_t name_pos = (SkipSpace(), pos_);
  std::string name;
  Shape shape;
  if (!ParseName(&name, "an instruction name") || !Expect('=', "after the instruction name") ||
      !ParseShape(&shape)) {
    return false;
  }
  HloInstruction* instr = ParseOpcodeAndOperands(comp, name, std::move(shape), name_pos);
  if (!instr) return false;
  if (root) {
    if (comp->root()) return Fail(start, "computation %" + comp->name() + " has two ROOTs");
    comp->set_root(instr);
  }
  while (TryEat(',')) {
    if (!ParseAttribute(instr)) return false;
  }
  return instr->opcode() != Opcode::kCustomCall || CheckCustomCall(*instr, name_pos);
}

// The custom-calls of sharding annotations are read (the SPMD partitioner consumes them);
// any other target is a custom kernel tpusim has no model of.
bool Parser::CheckCustomCall(const HloInstruction& instr, size_t pos) {
  const Attribute* a = instr.FindAttr("custom_call_target");
  const RawText* raw = a ? std::get_if<RawText>(&a->value) : nullptr;
  std::string target = raw ? raw->text : "";
  if (target.size() >= 2 && target.front() == '"') target = target.substr(1, target.size() - 2);
  if (IsShardingCustomCall(target)) return true;
  return Fail(pos, "unsupported op 'custom-call' (target \"" + target + "\") at " + Where(pos) +
                       ": tpusim reads only the sharding annotations (Sharding, "
                       "SPMDFullToShardShape, SPMDShardToFullShape, xla.sdy.*); it has no model "
                       "of custom kernels");
}

std::string Parser::UniqueName(std::string_view base) {
  std::string name;
  int64_t n = next_id_;
  do {
    name = std::string(base) + "." + std::to_string(n++);
  } while (all_names_.count(name));
  return name;
}

HloInstruction* Parser::ParseOpcodeAndOperands(HloComputation* comp, std::string name, Shape shape,
                                               size_t name_pos) {
  size_t op_pos = (SkipSpace(), pos_);
  std::string op_name;
  if (!ParseIdent(&op_name, "an opcode")) return nullptr;
  std::optional<Opcode> op = LookupOpcode(op_name);
  if (!op) return Fail(op_pos, "unknown opcode '" + op_name + "'"), nullptr;
  if (!IsSupported(*op)) return RejectOpcode(*op, op_pos), nullptr;
  if (names_.count(name)) {
    Fail(name_pos, "duplicate instruction name '%" + name + "' (first defined at " +
                       Where(all_names_[name]) + ")");
    return nullptr;
  }
  // Taken before the operands are read: a nested operand is named after this instruction and
  // must not get its name (found by the parser fuzzer: `%constant.3 = f32[] convert(f32[]
  // constant(0))` printed two instructions named %constant.3).
  all_names_[name] = name_pos;
  auto owned = std::make_unique<HloInstruction>(name, *op, std::move(shape));
  HloInstruction* instr = owned.get();
  if (*op == Opcode::kParameter) {
    int64_t n;
    size_t npos = (SkipSpace(), pos_);
    if (!Expect('(', "after parameter") || !ParseInt(&n, "as the parameter number") ||
        !Expect(')', "after the parameter number")) {
      return nullptr;
    }
    if (n < 0) return Fail(npos, "negative parameter number"), nullptr;
    instr->set_parameter_number(n);
  } else if (*op == Opcode::kConstant) {
    if (!Expect('(', "after constant") ||
        !ParseLiteral(instr->shape(), &instr->mutable_literal()) ||
        !Expect(')', "after the constant's value")) {
      return nullptr;
    }
  } else if (!ParseOperands(comp, instr)) {
    return nullptr;
  }
  instr->set_id(next_id_++);
  all_names_[name] = name_pos;
  names_[name] = instr;
  return comp->AddInstruction(std::move(owned));
}

bool Parser::ParseOperands(HloComputation* comp, HloInstruction* instr) {
  if (!Expect('(', "to start the operands of " + std::string(OpcodeName(instr->opcode())))) {
    return false;
  }
  if (TryEat(')')) return true;
  if (!Enter()) return false;
  do {
    size_t pos = (SkipSpace(), pos_);
    Shape shape;
    bool has_shape = LooksLikeShape();
    if (has_shape && !ParseShape(&shape)) return false;
    size_t name_pos = (SkipSpace(), pos_);
    std::string name;
    if (!ParseName(&name, "an operand name")) return false;
    if (Peek() == '(' && LookupOpcode(name)) {  // nested instruction: f32[] add(...)
      if (!has_shape) return Fail(pos, "a nested instruction needs a shape");
      pos_ = name_pos;
      HloInstruction* nested = ParseOpcodeAndOperands(comp, UniqueName(name), shape, name_pos);
      if (!nested) return false;
      instr->AddOperand(nested);
      continue;
    }
    auto it = names_.find(name);
    if (it == names_.end()) return Fail(name_pos, "undefined operand '%" + name + "'");
    HloInstruction* operand = it->second;
    if (PeekRaw() == '#') {  // %t#1: element 1 of tuple %t, an implicit get-tuple-element
      size_t hash_pos = pos_++;
      operand = TupleElement(comp, operand, hash_pos);
      if (!operand) return false;
    }
    if (has_shape && !shape.Compatible(operand->shape())) {
      return Fail(pos, "operand '%" + name + "' has shape " + operand->shape().ToString(false) +
                           " but is used as " + shape.ToString(false));
    }
    instr->AddOperand(operand);
  } while (TryEat(','));
  Leave();
  return Expect(')', "to end the operands");
}

HloInstruction* Parser::TupleElement(HloComputation* comp, HloInstruction* tuple, size_t pos) {
  int64_t index = -1;
  if (!ParseInt(&index, "as the tuple element after '#'")) return nullptr;
  const Shape& t = tuple->shape();
  if (!t.IsTuple() || index < 0 || static_cast<size_t>(index) >= t.tuple_shapes.size()) {
    Fail(pos, "'%" + tuple->name() + "#" + std::to_string(index) + "': %" + tuple->name() +
                  " has no tuple element " + std::to_string(index));
    return nullptr;
  }
  auto gte = std::make_unique<HloInstruction>(UniqueName(tuple->name() + ".gte"),
                                              Opcode::kGetTupleElement, t.tuple_shapes[index]);
  gte->AddOperand(tuple);
  gte->SetAttr("index", index);
  gte->set_id(next_id_++);
  all_names_[gte->name()] = pos;
  return comp->AddInstruction(std::move(gte));
}

bool Parser::RejectOpcode(Opcode op, size_t pos) {
  return Fail(pos, "unsupported op '" + std::string(OpcodeName(op)) + "' at " + Where(pos) + ": " +
                       std::string(GetOpcodeInfo(op).reason));
}

bool Parser::ResolveComputations() {
  for (const PendingRef& ref : pending_) {
    for (Attribute& a : ref.instr->mutable_attributes()) {
      if (a.key != ref.key) continue;
      auto* refs = std::get_if<ComputationRefs>(&a.value);
      if (!refs) continue;
      refs->computations.clear();
      for (const std::string& n : refs->names) {
        HloComputation* c = module_.Find(n);
        if (!c) return Fail(ref.pos, "undefined computation '%" + n + "'");
        if (c == ref.instr->parent()) {
          return Fail(ref.pos, "computation %" + n + " calls itself");
        }
        refs->computations.push_back(c);
      }
    }
  }
  return true;
}

}  // namespace internal
}  // namespace tpusim::hlo
