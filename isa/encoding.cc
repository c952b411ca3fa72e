#include "isa/encoding.h"

#include <climits>
#include <set>
#include <string>

namespace tpusim::isa {
namespace {

using U128 = unsigned __int128;

// Why one instruction's operands are invalid in a program with these sizes, or "".
std::string CheckOperands(const Instr& in, size_t num_instrs, size_t num_descs) {
  if (static_cast<int>(in.op) >= kNumOpcodes)
    return "unknown opcode " + std::to_string(static_cast<int>(in.op));
  const OpInfo& info = Info(in.op);
  for (int i = 0; i < kMaxOperands; ++i) {
    int32_t v = in.a[i];
    if (i >= info.num_operands()) {
      if (v != 0) return "unused operand " + std::to_string(i) + " is not zero";
      continue;
    }
    auto range = [&](const char* what, int64_t limit) -> std::string {
      if (v >= 0 && v < limit) return "";
      return std::string(what) + " index " + std::to_string(v) + " out of range";
    };
    std::string err;
    switch (info.operand(i)) {
      case OperandKind::kSreg:
        err = range("register", kNumSregs);
        break;
      case OperandKind::kVreg:
        err = range("vector register", kNumVregs);
        break;
      case OperandKind::kFlag:
        err = range("flag", kNumFlags);
        break;
      case OperandKind::kUnit:
        err = range("unit", kNumUnits);
        break;
      case OperandKind::kMxu:
        err = range("mxu", kMaxMxus);
        break;
      case OperandKind::kDesc:
        err = range("descriptor", static_cast<int64_t>(num_descs));
        break;
      case OperandKind::kLabel:
        if (v < 0 || static_cast<size_t>(v) > num_instrs)
          err = "label " + std::to_string(v) + " outside the program";
        break;
      default:
        break;  // immediates: any bit pattern
    }
    if (!err.empty()) return err;
  }
  return "";
}

std::string CheckDesc(const DmaDesc& d) {
  if (!IsIdentifier(d.name)) return "descriptor name '" + d.name + "' is not an identifier";
  if (d.rows == 0 || d.row_bytes == 0 || d.planes == 0)
    return "descriptor '" + d.name + "' has rows, row_bytes or planes 0";
  return "";
}

// Little-endian writer and bounds-checked reader.
void Put(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

struct Reader {
  std::span<const uint8_t> b;
  size_t pos = 0;
  size_t left() const { return b.size() - pos; }
  bool Get(uint64_t& v, int bytes) {
    if (left() < static_cast<size_t>(bytes)) return false;
    v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{b[pos + i]} << (8 * i);
    pos += bytes;
    return true;
  }
};

}  // namespace

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '.') return false;
  return true;
}

std::array<uint8_t, kInstrBytes> EncodeInstr(const Instr& instr) {
  U128 word = static_cast<uint8_t>(instr.op);
  int pos = 8;
  const OpInfo& info = Info(instr.op);
  for (int i = 0; i < info.num_operands(); ++i) {
    int bits = OperandBits(info.operand(i));
    uint64_t mask = (uint64_t{1} << bits) - 1;
    word |= U128{static_cast<uint32_t>(instr.a[i]) & mask} << pos;
    pos += bits;
  }
  std::array<uint8_t, kInstrBytes> out;
  for (size_t i = 0; i < kInstrBytes; ++i) out[i] = static_cast<uint8_t>(word >> (8 * i));
  return out;
}

Result<Instr> DecodeInstr(std::span<const uint8_t> bytes) {
  if (bytes.size() < kInstrBytes) return Error::AtOffset(bytes.size(), "truncated instruction");
  U128 word = 0;
  for (size_t i = 0; i < kInstrBytes; ++i) word |= U128{bytes[i]} << (8 * i);
  int opcode = static_cast<int>(word & 0xff);
  if (opcode >= kNumOpcodes) return Error::AtOffset(0, "unknown opcode " + std::to_string(opcode));
  Instr in;
  in.op = static_cast<Opcode>(opcode);
  const OpInfo& info = Info(in.op);
  int pos = 8;
  for (int i = 0; i < info.num_operands(); ++i) {
    int bits = OperandBits(info.operand(i));
    uint64_t mask = (uint64_t{1} << bits) - 1;
    in.a[i] = static_cast<int32_t>(static_cast<uint32_t>((word >> pos) & mask));
    pos += bits;
  }
  if (U128 reserved = word >> pos; reserved != 0) {
    auto lo = static_cast<uint64_t>(reserved);
    int low_bit =
        lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll(static_cast<uint64_t>(reserved >> 64));
    return Error::AtOffset((pos + low_bit) / 8, "nonzero reserved bits");
  }
  // Labels and descriptors are checked with the program; use unbounded limits here.
  std::string err = CheckOperands(in, INT32_MAX, kMaxDescriptors);
  if (!err.empty()) return Error::AtOffset(1, err);
  return in;
}

std::vector<uint8_t> EncodeProgram(const Program& p) {
  const std::string_view magic = p.collective_entry ? kProgramMagic2 : kProgramMagic;
  std::vector<uint8_t> out(magic.begin(), magic.end());
  Put(out, p.tags.size(), 4);
  Put(out, p.descs.size(), 4);
  Put(out, p.code.size(), 4);
  if (p.collective_entry) Put(out, *p.collective_entry, 4);
  for (const std::string& t : p.tags) {
    Put(out, t.size(), 4);
    out.insert(out.end(), t.begin(), t.end());
  }
  for (const DmaDesc& d : p.descs) {
    Put(out, d.name.size(), 4);
    out.insert(out.end(), d.name.begin(), d.name.end());
    Put(out, d.rows, 4);
    Put(out, d.row_bytes, 4);
    Put(out, static_cast<uint64_t>(d.src_stride), 8);
    Put(out, static_cast<uint64_t>(d.dst_stride), 8);
    Put(out, d.planes, 4);
    Put(out, static_cast<uint64_t>(d.src_plane_stride), 8);
    Put(out, static_cast<uint64_t>(d.dst_plane_stride), 8);
  }
  for (const Instr& in : p.code) {
    auto bytes = EncodeInstr(in);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  for (const Instr& in : p.code) Put(out, in.tag, 2);
  return out;
}

Result<Program> DecodeProgram(std::span<const uint8_t> bytes) {
  Reader r{bytes};
  auto fail = [&](size_t at, std::string why) -> Result<Program> {
    return Error::AtOffset(at, std::move(why));
  };
  auto truncated = [&]() { return fail(r.pos, "truncated"); };
  const std::string_view magic =
      bytes.size() < kProgramMagic.size()
          ? std::string_view()
          : std::string_view(reinterpret_cast<const char*>(bytes.data()), kProgramMagic.size());
  if (magic != kProgramMagic && magic != kProgramMagic2)
    return fail(0, "bad magic (expected \"TPUSIM01\" or \"TPUSIM02\")");
  r.pos = kProgramMagic.size();
  uint64_t num_tags, num_descs, num_instrs, entry = 0;
  size_t counts_at = r.pos;
  if (!r.Get(num_tags, 4) || !r.Get(num_descs, 4) || !r.Get(num_instrs, 4)) return truncated();
  const bool has_entry = magic == kProgramMagic2;
  if (has_entry && !r.Get(entry, 4)) return truncated();
  // Each count is bounded by its limit and by the smallest encoding of its items.
  if (num_tags == 0 || num_tags > kMaxTags || num_tags * 4 > r.left())
    return fail(counts_at, "absurd tag count " + std::to_string(num_tags));
  if (num_descs > kMaxDescriptors || num_descs * 48 > r.left())
    return fail(counts_at + 4, "absurd descriptor count " + std::to_string(num_descs));
  if (num_instrs * (kInstrBytes + 2) > r.left())
    return fail(counts_at + 8, "absurd instruction count " + std::to_string(num_instrs));
  Program p;
  if (has_entry) {
    if (entry >= num_instrs)
      return fail(counts_at + 12, "collective entry " + std::to_string(entry) +
                                      " is not an instruction (" + std::to_string(num_instrs) +
                                      ")");
    p.collective_entry = static_cast<uint32_t>(entry);
  }
  p.tags.clear();
  p.tags.reserve(num_tags);
  std::set<std::string_view> seen;
  auto get_string = [&](std::string& s) {
    uint64_t len;
    if (!r.Get(len, 4) || len > r.left()) return false;
    s.assign(reinterpret_cast<const char*>(bytes.data() + r.pos), len);
    r.pos += len;
    return true;
  };
  for (uint64_t i = 0; i < num_tags; ++i) {
    size_t at = r.pos;
    if (!get_string(p.tags.emplace_back())) return truncated();
    if (i == 0 && !p.tags[0].empty()) return fail(at, "tags[0] must be empty");
    if (!seen.insert(p.tags.back()).second) return fail(at, "duplicate tag");
  }
  seen.clear();
  p.descs.reserve(num_descs);
  for (uint64_t i = 0; i < num_descs; ++i) {
    size_t at = r.pos;
    DmaDesc& d = p.descs.emplace_back();
    uint64_t rows, row_bytes, ss, ds, planes, sps, dps;
    if (!get_string(d.name) || !r.Get(rows, 4) || !r.Get(row_bytes, 4) || !r.Get(ss, 8) ||
        !r.Get(ds, 8) || !r.Get(planes, 4) || !r.Get(sps, 8) || !r.Get(dps, 8))
      return truncated();
    d.rows = static_cast<uint32_t>(rows);
    d.row_bytes = static_cast<uint32_t>(row_bytes);
    d.src_stride = static_cast<int64_t>(ss);
    d.dst_stride = static_cast<int64_t>(ds);
    d.planes = static_cast<uint32_t>(planes);
    d.src_plane_stride = static_cast<int64_t>(sps);
    d.dst_plane_stride = static_cast<int64_t>(dps);
    if (std::string err = CheckDesc(d); !err.empty()) return fail(at, err);
    if (!seen.insert(d.name).second) return fail(at, "duplicate descriptor '" + d.name + "'");
  }
  if (num_instrs * (kInstrBytes + 2) != r.left())
    return fail(r.pos, num_instrs * (kInstrBytes + 2) > r.left() ? "truncated" : "trailing bytes");
  p.code.reserve(num_instrs);
  size_t tags_at = r.pos + num_instrs * kInstrBytes;
  for (uint64_t i = 0; i < num_instrs; ++i) {
    size_t at = r.pos;
    Result<Instr> in = DecodeInstr(bytes.subspan(at, kInstrBytes));
    if (!in) return fail(at + in.error().offset, in.error().reason);
    std::string err = CheckOperands(*in, num_instrs, num_descs);
    if (!err.empty()) return fail(at + 1, err);
    uint16_t tag = static_cast<uint16_t>(bytes[tags_at + 2 * i] | bytes[tags_at + 2 * i + 1] << 8);
    if (tag >= num_tags)
      return fail(tags_at + 2 * i, "tag " + std::to_string(tag) + " out of range");
    in->tag = tag;
    p.code.push_back(*in);
    r.pos += kInstrBytes;
  }
  return p;
}

std::optional<Error> Validate(const Program& p) {
  auto fail = [](std::string why) { return Error::AtOffset(0, std::move(why)); };
  if (p.tags.empty() || !p.tags[0].empty()) return fail("tags[0] must be \"\"");
  if (p.tags.size() > kMaxTags) return fail("too many tags");
  if (p.descs.size() > static_cast<size_t>(kMaxDescriptors)) return fail("too many descriptors");
  if (p.code.size() > INT32_MAX) return fail("too many instructions");
  if (p.collective_entry && *p.collective_entry >= p.code.size())
    return fail("the collective entry " + std::to_string(*p.collective_entry) +
                " is not an instruction");
  std::set<std::string_view> seen;
  for (const std::string& t : p.tags)
    if (!seen.insert(t).second) return fail("duplicate tag \"" + t + "\"");
  seen.clear();
  for (const DmaDesc& d : p.descs) {
    if (std::string err = CheckDesc(d); !err.empty()) return fail(err);
    if (!seen.insert(d.name).second) return fail("duplicate descriptor '" + d.name + "'");
  }
  for (size_t i = 0; i < p.code.size(); ++i) {
    std::string err = CheckOperands(p.code[i], p.code.size(), p.descs.size());
    if (err.empty() && p.code[i].tag >= p.tags.size()) err = "tag out of range";
    if (!err.empty()) return fail("instruction " + std::to_string(i) + ": " + err);
  }
  return std::nullopt;
}

}  // namespace tpusim::isa
