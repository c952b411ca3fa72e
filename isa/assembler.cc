#include "isa/assembler.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "isa/encoding.h"

namespace tpusim::isa {
namespace {

enum class Tok { kWord, kString, kComma, kEquals };
struct Token {
  Tok kind;
  std::string text;  // a word, or a string's unescaped contents
  int col;           // 1-based
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether c may be part of a word: anything but blanks, separators, quotes and comment starts.
bool IsWordChar(char c) {
  static const std::array<bool, 256> kWord = [] {
    std::array<bool, 256> t;
    t.fill(true);
    for (char d : std::string_view(" \t\r\v\f,=\"#;")) t[static_cast<unsigned char>(d)] = false;
    return t;
  }();
  return kWord[static_cast<unsigned char>(c)];
}

// Splits one line into tokens (replacing `out`), dropping the comment. On error sets
// `err_col`/`err`.
void Lex(std::string_view line, std::vector<Token>& out, int& err_col, std::string& err) {
  out.clear();
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    int col = static_cast<int>(i) + 1;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      ++i;
    } else if (c == '#' || c == ';') {
      break;
    } else if (c == ',' || c == '=') {
      out.push_back({c == ',' ? Tok::kComma : Tok::kEquals, std::string(1, c), col});
      ++i;
    } else if (c == '"') {
      std::string s;
      for (++i;; ++i) {
        if (i >= line.size()) {
          err_col = col, err = "unterminated string";
          return;
        }
        char d = line[i];
        if (d == '"') break;
        if (d != '\\') {
          s += d;
          continue;
        }
        char e = i + 1 < line.size() ? line[i + 1] : '\0';
        int hi = i + 2 < line.size() ? HexValue(line[i + 2]) : -1;
        int lo = i + 3 < line.size() ? HexValue(line[i + 3]) : -1;
        if (e == '\\' || e == '"') {
          s += e, i += 1;
        } else if (e == 'n' || e == 't') {
          s += e == 'n' ? '\n' : '\t', i += 1;
        } else if (e == 'x' && hi >= 0 && lo >= 0) {
          s += static_cast<char>(hi * 16 + lo), i += 3;
        } else {
          err_col = static_cast<int>(i) + 1, err = "bad escape in string";
          return;
        }
      }
      ++i;
      out.push_back({Tok::kString, std::move(s), col});
    } else {
      size_t j = i;
      while (j < line.size() && IsWordChar(line[j])) ++j;
      out.push_back({Tok::kWord, std::string(line.substr(i, j - i)), col});
      i = j;
    }
  }
}

// Parses [-](0x hex | decimal) into a sign and magnitude.
bool ParseInteger(std::string_view s, bool& neg, bool& hex, uint64_t& mag) {
  neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (hex) s.remove_prefix(2);
  if (s.empty()) return false;
  mag = 0;
  for (char c : s) {
    int d = HexValue(c);
    if (d < 0 || (!hex && d > 9)) return false;
    uint64_t base = hex ? 16 : 10;
    if (mag > (UINT64_MAX - d) / base)
      mag = UINT64_MAX;  // saturate: out of any range
    else
      mag = mag * base + d;
  }
  return true;
}

class Assembler {
 public:
  explicit Assembler(std::string_view file) : file_(file) {}
  Result<Program> Run(std::string_view text);

 private:
  struct Fixup {
    size_t instr;
    int operand;
    std::string name;
    int line, col;
  };
  Error Err(int col, std::string msg) const { return Error::AtText(file_, line_, col, msg); }
  std::optional<Error> Statement(std::vector<Token>& t);
  std::optional<Error> Instruction(const std::vector<Token>& t);
  std::optional<Error> Operand(OperandKind k, const Token& tok, int32_t& out);
  std::optional<Error> Int(const Token& tok, int64_t lo, int64_t hi, bool hex32, int64_t& out);
  std::optional<Error> Desc(const std::vector<Token>& t);
  std::optional<Error> Intern(const Token& tok, uint16_t* id);

  std::string_view file_;
  int line_ = 0;
  Program p_;
  std::unordered_map<std::string, int32_t> labels_, descs_, equs_;
  std::unordered_map<std::string, uint16_t> tag_ids_{{"", 0}};
  uint16_t tag_ = 0;
  int collective_line_ = 0;  // where .collective stands
  std::vector<Fixup> fixups_;
};

Result<Program> Assembler::Run(std::string_view text) {
  std::vector<Token> toks;  // reused line after line
  while (!text.empty() || line_ == 0) {
    ++line_;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    int err_col = 0;
    std::string lex_err;
    Lex(line, toks, err_col, lex_err);
    if (!lex_err.empty()) return Err(err_col, lex_err);
    if (auto e = Statement(toks)) return *e;
  }
  for (const Fixup& f : fixups_) {
    auto it = labels_.find(f.name);
    if (it == labels_.end())
      return Error::AtText(file_, f.line, f.col, "undefined label '" + f.name + "'");
    p_.code[f.instr].a[f.operand] = it->second;
  }
  if (p_.collective_entry && *p_.collective_entry >= p_.code.size())
    return Error::AtText(file_, collective_line_, 1,
                         ".collective is not followed by an instruction");
  return std::move(p_);
}

std::optional<Error> Assembler::Statement(std::vector<Token>& t) {
  while (!t.empty() && t[0].kind == Tok::kWord && t[0].text.size() > 1 && t[0].text.back() == ':') {
    std::string name = t[0].text.substr(0, t[0].text.size() - 1);
    if (!IsIdentifier(name)) return Err(t[0].col, "bad label name '" + name + "'");
    if (!labels_.emplace(name, static_cast<int32_t>(p_.code.size())).second)
      return Err(t[0].col, "duplicate label '" + name + "'");
    t.erase(t.begin());
  }
  if (t.empty()) return std::nullopt;
  if (t[0].kind != Tok::kWord) return Err(t[0].col, "expected a mnemonic or directive");
  const std::string& w = t[0].text;
  if (w[0] != '.') return Instruction(t);
  if (w == ".desc") return Desc(t);
  if (w == ".tag") {
    if (t.size() != 2 || t[1].kind != Tok::kString)
      return Err(t.size() > 1 ? t[1].col : t[0].col, ".tag expects one string");
    return Intern(t[1], &tag_);
  }
  if (w == ".tags") {
    for (size_t i = 1; i < t.size(); ++i) {
      if (t[i].kind == Tok::kComma && i % 2 == 0) continue;
      if (t[i].kind != Tok::kString || i % 2 == 0) return Err(t[i].col, "expected a string");
      if (auto e = Intern(t[i], nullptr)) return e;
    }
    return std::nullopt;
  }
  if (w == ".collective") {  // the collective stream starts at the next instruction
    if (t.size() != 1) return Err(t[1].col, ".collective takes no operands");
    if (p_.collective_entry) return Err(t[0].col, "a second .collective (a program has one)");
    p_.collective_entry = static_cast<uint32_t>(p_.code.size());
    collective_line_ = line_;
    return std::nullopt;
  }
  if (w == ".equ") {
    if (t.size() != 3 || t[1].kind != Tok::kWord || t[2].kind != Tok::kWord)
      return Err(t[0].col, ".equ expects a name and a value");
    if (!IsIdentifier(t[1].text)) return Err(t[1].col, "bad constant name '" + t[1].text + "'");
    int64_t v;
    if (auto e = Int(t[2], INT32_MIN, INT32_MAX, true, v)) return e;
    if (!equs_.emplace(t[1].text, static_cast<int32_t>(v)).second)
      return Err(t[1].col, "duplicate constant '" + t[1].text + "'");
    return std::nullopt;
  }
  return Err(t[0].col, "unknown directive '" + w + "'");
}

std::optional<Error> Assembler::Intern(const Token& tok, uint16_t* id) {
  auto it = tag_ids_.find(tok.text);
  if (it == tag_ids_.end()) {
    if (p_.tags.size() >= kMaxTags) return Err(tok.col, "too many tags");
    it = tag_ids_.emplace(tok.text, static_cast<uint16_t>(p_.tags.size())).first;
    p_.tags.push_back(tok.text);
  }
  if (id) *id = it->second;
  return std::nullopt;
}

std::optional<Error> Assembler::Instruction(const std::vector<Token>& t) {
  std::optional<Opcode> op = FindMnemonic(t[0].text);
  if (!op) return Err(t[0].col, "unknown mnemonic '" + t[0].text + "'");
  const OpInfo& info = Info(*op);
  std::vector<const Token*> ops;
  for (size_t i = 1; i < t.size(); ++i) {
    bool want_operand = i % 2 == 1;
    if (want_operand && t[i].kind != Tok::kWord)
      return Err(t[i].col, "expected an operand, got '" + t[i].text + "'");
    if (!want_operand && t[i].kind != Tok::kComma)
      return Err(t[i].col, "expected ',', got '" + t[i].text + "'");
    if (want_operand) ops.push_back(&t[i]);
  }
  if (t.size() > 1 && t.back().kind == Tok::kComma) return Err(t.back().col, "expected an operand");
  if (static_cast<int>(ops.size()) != info.num_operands()) {
    int col = static_cast<int>(ops.size()) > info.num_operands() ? ops[info.num_operands()]->col
                                                                 : t[0].col;
    return Err(col, "'" + t[0].text + "' expects " + std::to_string(info.num_operands()) +
                        " operands, got " + std::to_string(ops.size()));
  }
  if (p_.code.size() >= static_cast<size_t>(INT32_MAX)) return Err(t[0].col, "program too long");
  Instr in;
  in.op = *op;
  in.tag = tag_;
  for (int i = 0; i < info.num_operands(); ++i) {
    OperandKind k = info.operand(i);
    if (k == OperandKind::kLabel) {
      if (!IsIdentifier(ops[i]->text))
        return Err(ops[i]->col, "expected label, got '" + ops[i]->text + "'");
      fixups_.push_back({p_.code.size(), i, ops[i]->text, line_, ops[i]->col});
    } else if (auto e = Operand(k, *ops[i], in.a[i])) {
      return e;
    }
  }
  p_.code.push_back(in);
  return std::nullopt;
}

std::optional<Error> Assembler::Operand(OperandKind k, const Token& tok, int32_t& out) {
  const std::string& s = tok.text;
  auto got = [&](const char* what) {
    return Err(tok.col, std::string("expected ") + what + ", got '" + s + "'");
  };
  auto reg = [&](char prefix, int limit, const char* what) -> std::optional<Error> {
    if (s.size() < 2 || s[0] != prefix) return got(what);
    int index = 0;  // at most three digits are read: more is out of range anyway
    for (size_t i = 1; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return got(what);
      if (i < 4) index = index * 10 + (s[i] - '0');
    }
    if (s.size() > 4 || index >= limit)
      return Err(tok.col, std::string(what) + " out of range: '" + s + "'");
    out = index;
    return std::nullopt;
  };
  switch (k) {
    case OperandKind::kSreg:
      return reg('r', kNumSregs, "scalar register");
    case OperandKind::kVreg:
      return reg('v', kNumVregs, "vector register");
    case OperandKind::kFlag:
      return reg('f', kNumFlags, "flag");
    case OperandKind::kMxu:
      return reg('m', kMaxMxus, "mxu");
    case OperandKind::kUnit: {
      std::optional<Unit> u = FindUnit(s);
      if (!u) return got("unit (seq, dma, mxu0..mxu3, vpu)");
      out = static_cast<int32_t>(*u);
      return std::nullopt;
    }
    case OperandKind::kDesc: {
      auto it = descs_.find(s);
      if (it == descs_.end()) return Err(tok.col, "undefined descriptor '" + s + "'");
      out = it->second;
      return std::nullopt;
    }
    case OperandKind::kFimm: {
      std::optional<uint32_t> bits = ParseF32(s);
      if (!bits) return got("f32 immediate");
      out = static_cast<int32_t>(*bits);
      return std::nullopt;
    }
    default: {  // kImm
      int64_t v;
      if (auto e = Int(tok, INT32_MIN, INT32_MAX, true, v)) return e;
      out = static_cast<int32_t>(v);
      return std::nullopt;
    }
  }
}

// An integer in [lo, hi], or an .equ name; with hex32, hex up to 0xffffffff is a bit pattern.
std::optional<Error> Assembler::Int(const Token& tok, int64_t lo, int64_t hi, bool hex32,
                                    int64_t& out) {
  bool neg, hex;
  uint64_t mag;
  if (!ParseInteger(tok.text, neg, hex, mag)) {
    if (!IsIdentifier(tok.text)) return Err(tok.col, "bad number '" + tok.text + "'");
    auto it = equs_.find(tok.text);
    if (it == equs_.end()) return Err(tok.col, "undefined constant '" + tok.text + "'");
    mag = static_cast<uint64_t>(std::abs(int64_t{it->second}));
    neg = it->second < 0, hex = false;
  }
  __int128 v = neg ? -static_cast<__int128>(mag) : static_cast<__int128>(mag);
  if (hex32 && hex && !neg && mag <= UINT32_MAX)
    v = static_cast<int32_t>(static_cast<uint32_t>(mag));
  bool ok = v >= lo && v <= hi;
  out = ok ? static_cast<int64_t>(v) : 0;
  if (!ok) return Err(tok.col, "immediate out of range: '" + tok.text + "'");
  return std::nullopt;
}

std::optional<Error> Assembler::Desc(const std::vector<Token>& t) {
  if (t.size() < 2 || t[1].kind != Tok::kWord || !IsIdentifier(t[1].text))
    return Err(t.size() > 1 ? t[1].col : t[0].col, ".desc expects a name");
  if (descs_.count(t[1].text)) return Err(t[1].col, "duplicate descriptor '" + t[1].text + "'");
  if (p_.descs.size() >= static_cast<size_t>(kMaxDescriptors))
    return Err(t[1].col, "too many descriptors");
  DmaDesc d;
  d.name = t[1].text;
  std::map<std::string, bool> seen;
  for (size_t i = 2; i < t.size(); i += 3) {
    if (i + 2 >= t.size() || t[i].kind != Tok::kWord || t[i + 1].kind != Tok::kEquals ||
        t[i + 2].kind != Tok::kWord)
      return Err(t[i].col, "expected key=value");
    const std::string& key = t[i].text;
    if (seen[key]) return Err(t[i].col, "duplicate .desc key '" + key + "'");
    seen[key] = true;
    int64_t v;
    uint32_t* u32 = key == "rows"        ? &d.rows
                    : key == "row_bytes" ? &d.row_bytes
                    : key == "planes"    ? &d.planes
                                         : nullptr;
    int64_t* i64 = key == "src_stride"         ? &d.src_stride
                   : key == "dst_stride"       ? &d.dst_stride
                   : key == "src_plane_stride" ? &d.src_plane_stride
                   : key == "dst_plane_stride" ? &d.dst_plane_stride
                                               : nullptr;
    if (u32) {
      if (auto e = Int(t[i + 2], 1, UINT32_MAX, false, v)) return e;
      *u32 = static_cast<uint32_t>(v);
    } else if (i64) {
      if (auto e = Int(t[i + 2], INT64_MIN, INT64_MAX, false, v)) return e;
      *i64 = v;
    } else {
      return Err(t[i].col, "unknown .desc key '" + key + "'");
    }
  }
  if (!seen["row_bytes"]) return Err(t[0].col, ".desc '" + d.name + "' needs row_bytes");
  descs_[d.name] = static_cast<int32_t>(p_.descs.size());
  p_.descs.push_back(std::move(d));
  return std::nullopt;
}

}  // namespace

std::optional<uint32_t> ParseF32(std::string_view s) {
  if (s == "inf") return 0x7f800000u;
  if (s == "-inf") return 0xff800000u;
  if (s == "nan") return 0x7fc00000u;
  if (s.substr(0, 6) == "f32:0x") {
    bool neg, hex;
    uint64_t mag;
    if (s.size() > 14 || !ParseInteger(s.substr(4), neg, hex, mag) || neg) return std::nullopt;
    return static_cast<uint32_t>(mag);
  }
  if (s.empty() || s.find_first_not_of("0123456789.eE+-") != s.npos ||
      s.find_first_of("0123456789") == s.npos)
    return std::nullopt;
  std::string z(s);
  char* end = nullptr;
  float f = std::strtof(z.c_str(), &end);
  if (end != z.c_str() + z.size() || std::isinf(f)) return std::nullopt;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

Result<Program> Assemble(std::string_view text, std::string_view filename) {
  return Assembler(filename).Run(text);
}

}  // namespace tpusim::isa
