// Printing of modules, computations and instructions in XLA's text format.
#include "compiler/hlo/printer.h"

namespace tpusim::hlo {

std::string PrintInstruction(const HloInstruction& instr) {
  std::string out = "%" + instr.name() + " = " + instr.shape().ToString() + " " +
                    std::string(OpcodeName(instr.opcode())) + "(";
  if (instr.opcode() == Opcode::kParameter) {
    out += std::to_string(instr.parameter_number());
  } else if (instr.opcode() == Opcode::kConstant) {
    out += PrintLiteral(instr.shape(), instr.literal());
  } else {
    for (size_t i = 0; i < instr.operand_count(); ++i) {
      if (i) out += ", ";
      const HloInstruction* op = instr.operand(i);
      out += op->shape().ToString() + " %" + op->name();
    }
  }
  out += ")";
  for (const Attribute& a : instr.attributes()) {
    out += ", " + a.key + "=" + PrintAttrValue(a.value);
  }
  return out;
}

std::string PrintComputation(const HloComputation& comp) {
  std::string out;
  if (comp.is_entry()) out += "ENTRY ";
  out += "%" + comp.name() + " (";
  std::vector<HloInstruction*> params = comp.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (i) out += ", ";
    out += params[i]->name() + ": " + params[i]->shape().ToString();
  }
  out += ") -> ";
  out += comp.root() ? comp.root()->shape().ToString() : "()";
  out += " {\n";
  for (const auto& instr : comp.instructions()) {
    out += instr.get() == comp.root() ? "  ROOT " : "  ";
    out += PrintInstruction(*instr) + "\n";
  }
  out += "}";
  for (const Attribute& a : comp.attributes()) out += ", " + a.key + "=" + PrintAttrValue(a.value);
  return out + "\n";
}

std::string PrintModule(const HloModule& module) {
  std::string out = "HloModule " + module.name;
  bool replicas = false, partitions = false;
  for (const Attribute& a : module.header) {
    out += ", " + a.key + "=";
    if (a.key == "replica_count") {
      out += std::to_string(module.replica_count);
      replicas = true;
    } else if (a.key == "num_partitions") {
      out += std::to_string(module.num_partitions);
      partitions = true;
    } else {
      out += PrintAttrValue(a.value);
    }
  }
  if (!replicas && module.replica_count != 1) {
    out += ", replica_count=" + std::to_string(module.replica_count);
  }
  if (!partitions && module.num_partitions != 1) {
    out += ", num_partitions=" + std::to_string(module.num_partitions);
  }
  out += "\n";
  out += PrintStackFrames(module.stack_frames);
  for (const auto& comp : module.computations()) out += "\n" + PrintComputation(*comp);
  return out;
}

}  // namespace tpusim::hlo
