#include "isa/disassembler.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "isa/assembler.h"

namespace tpusim::isa {

std::string FormatF32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  if (std::isnan(f)) {
    if (bits == 0x7fc00000u) return "nan";
  } else if (std::isinf(f)) {
    return f > 0 ? "inf" : "-inf";
  } else {
    char buf[32];
    for (int prec = 1; prec <= 9; ++prec) {
      std::snprintf(buf, sizeof buf, "%.*g", prec, static_cast<double>(f));
      if (ParseF32(buf) == bits) return buf;
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "f32:0x%08x", bits);
  return buf;
}

std::string QuoteString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out + "\"";
}

std::string DisassembleInstr(const Instr& in, const Program& p) {
  if (static_cast<int>(in.op) >= kNumOpcodes) return "<bad opcode>";
  const OpInfo& info = Info(in.op);
  std::string out(info.mnemonic);
  for (int i = 0; i < info.num_operands(); ++i) {
    out += i == 0 ? " " : ", ";
    int32_t v = in.a[i];
    auto reg = [&](char prefix, int limit) {
      return v >= 0 && v < limit ? prefix + std::to_string(v) : "<bad " + std::to_string(v) + ">";
    };
    switch (info.operand(i)) {
      case OperandKind::kSreg:
        out += reg('r', kNumSregs);
        break;
      case OperandKind::kVreg:
        out += reg('v', kNumVregs);
        break;
      case OperandKind::kFlag:
        out += reg('f', kNumFlags);
        break;
      case OperandKind::kMxu:
        out += reg('m', kMaxMxus);
        break;
      case OperandKind::kUnit:
        out += v >= 0 && v < kNumUnits ? std::string(UnitName(static_cast<Unit>(v))) : "<bad unit>";
        break;
      case OperandKind::kImm:
        out += std::to_string(v);
        break;
      case OperandKind::kLabel:
        out += 'L';
        out += std::to_string(v);
        break;
      case OperandKind::kDesc:
        out += v >= 0 && static_cast<size_t>(v) < p.descs.size() ? p.descs[v].name : "<bad desc>";
        break;
      case OperandKind::kFimm:
        out += FormatF32(static_cast<uint32_t>(v));
        break;
    }
  }
  return out;
}

std::string Disassemble(const Program& p) {
  std::string out;
  // Tags in the order the assembler would intern them; declare the table if it differs.
  std::vector<uint16_t> first_use;
  std::set<uint16_t> used{0};
  for (const Instr& in : p.code)
    if (used.insert(in.tag).second) first_use.push_back(in.tag);
  bool canonical = first_use.size() + 1 == p.tags.size();
  for (size_t i = 0; canonical && i < first_use.size(); ++i) canonical = first_use[i] == i + 1;
  if (!canonical && p.tags.size() > 1) {
    out += ".tags";
    for (size_t i = 1; i < p.tags.size(); ++i)
      out += (i == 1 ? " " : ", ") + QuoteString(p.tags[i]);
    out += "\n";
  }
  for (const DmaDesc& d : p.descs) {
    out += ".desc " + d.name + " rows=" + std::to_string(d.rows) +
           " row_bytes=" + std::to_string(d.row_bytes) +
           " src_stride=" + std::to_string(d.src_stride) +
           " dst_stride=" + std::to_string(d.dst_stride);
    if (d.planes != 1 || d.src_plane_stride != 0 || d.dst_plane_stride != 0)
      out += " planes=" + std::to_string(d.planes) +
             " src_plane_stride=" + std::to_string(d.src_plane_stride) +
             " dst_plane_stride=" + std::to_string(d.dst_plane_stride);
    out += "\n";
  }
  std::set<int32_t> targets;
  for (const Instr& in : p.code) {
    if (static_cast<int>(in.op) >= kNumOpcodes) continue;
    const OpInfo& info = Info(in.op);
    for (int i = 0; i < info.num_operands(); ++i)
      if (info.operand(i) == OperandKind::kLabel) targets.insert(in.a[i]);
  }
  uint16_t tag = 0;
  for (size_t i = 0; i <= p.code.size(); ++i) {
    if (targets.count(static_cast<int32_t>(i))) {
      out += 'L';
      out += std::to_string(i);
      out += ":\n";
    }
    if (i == p.code.size()) break;
    if (p.collective_entry == i) out += ".collective\n";
    const Instr& in = p.code[i];
    if (in.tag != tag) {
      tag = in.tag;
      out += ".tag " + QuoteString(tag < p.tags.size() ? p.tags[tag] : "<bad tag>") + "\n";
    }
    out += "  " + DisassembleInstr(in, p) + "\n";
  }
  return out;
}

}  // namespace tpusim::isa
