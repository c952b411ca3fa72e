// Lexing primitives of the HLO parser: whitespace, comments, names, numbers, raw text.
#include <charconv>
#include <cmath>
#include <limits>

#include "compiler/hlo/parse/parser_impl.h"
#include "compiler/hlo/parser.h"

namespace tpusim::hlo::internal {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) {
  return IsIdentStart(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

}  // namespace

void Parser::LineCol(size_t pos, int* line, int* col) const {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < pos && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++*line;
      *col = 1;
    } else {
      ++*col;
    }
  }
}

std::string Parser::Where(size_t pos) const {
  int line, col;
  LineCol(pos, &line, &col);
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

bool Parser::Fail(size_t pos, const std::string& msg) {
  if (error_.ok()) {
    int line, col;
    LineCol(pos, &line, &col);
    error_ = Status::Error(
        file_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + msg, line, col);
  }
  return false;
}

bool Parser::FailHere(const std::string& msg) {
  SkipSpace();
  if (pos_ >= text_.size()) return Fail(pos_, "unexpected end of input: " + msg);
  return Fail(pos_, msg);
}

bool Parser::Enter() {
  if (++depth_ > kMaxNestingDepth) {
    return Fail(pos_, "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels");
  }
  return true;
}

bool Parser::SkipSpace() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
      size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) return Fail(pos_, "unterminated /* comment");
      pos_ = end + 2;
    } else {
      break;
    }
  }
  return true;
}

char Parser::Peek() {
  SkipSpace();
  return PeekRaw();
}

bool Parser::TryEat(char c) {
  if (Peek() != c) return false;
  ++pos_;
  return true;
}

bool Parser::Expect(char c, std::string_view context) {
  if (TryEat(c)) return true;
  return FailHere(std::string("expected '") + c + "' " + std::string(context));
}

std::string_view Parser::PeekIdent() {
  SkipSpace();
  size_t end = pos_;
  if (end < text_.size() && IsIdentStart(text_[end])) {
    while (end < text_.size() && IsIdentChar(text_[end])) ++end;
  }
  return text_.substr(pos_, end - pos_);
}

bool Parser::TryKeyword(std::string_view word) {
  if (PeekIdent() != word) return false;
  pos_ += word.size();
  return true;
}

bool Parser::ParseIdent(std::string* out, std::string_view what) {
  std::string_view id = PeekIdent();
  if (id.empty()) return FailHere("expected " + std::string(what));
  *out = std::string(id);
  pos_ += id.size();
  return true;
}

bool Parser::ParseName(std::string* out, std::string_view what) {
  SkipSpace();
  size_t start = pos_;
  if (PeekRaw() == '%') {
    ++pos_;
    size_t end = pos_;
    while (end < text_.size() && IsIdentChar(text_[end])) ++end;
    if (end == pos_) return Fail(start, "expected a name after '%'");
    *out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end;
    return true;
  }
  return ParseIdent(out, what);
}

bool Parser::ParseNumberToken(std::string_view* tok) {
  SkipSpace();
  size_t start = pos_, end = pos_;
  if (end < text_.size() && (text_[end] == '-' || text_[end] == '+')) ++end;
  while (end < text_.size()) {
    char c = text_[end];
    bool exp_sign = (c == '-' || c == '+') && (text_[end - 1] == 'e' || text_[end - 1] == 'E');
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
        exp_sign) {
      ++end;
    } else {
      break;
    }
  }
  *tok = text_.substr(start, end - start);
  if (tok->empty() || *tok == "-" || *tok == "+") return Fail(start, "expected a number");
  pos_ = end;
  return true;
}

bool Parser::ParseInt(int64_t* out, std::string_view what) {
  SkipSpace();
  size_t start = pos_, end = pos_;
  if (end < text_.size() && text_[end] == '-') ++end;
  while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') ++end;
  const char* b = text_.data() + start;
  auto [p, ec] = std::from_chars(b, text_.data() + end, *out);
  if (ec == std::errc::result_out_of_range) return Fail(start, "integer out of range");
  if (ec != std::errc() || p == b) return FailHere("expected an integer " + std::string(what));
  pos_ = end;
  return true;
}

bool Parser::ParseDouble(double* out, std::string_view what) {
  std::string_view tok;
  size_t start = (SkipSpace(), pos_);
  if (!ParseNumberToken(&tok)) return false;
  bool neg = tok[0] == '-';
  std::string_view body = (tok[0] == '-' || tok[0] == '+') ? tok.substr(1) : tok;
  if (body == "inf") {
    *out = neg ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (body == "nan") {
    *out =
        neg ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  const char* b = body.data();
  auto [p, ec] = std::from_chars(b, b + body.size(), *out);
  if (ec == std::errc::result_out_of_range) {
    *out = HUGE_VAL;  // from_chars leaves it; use the overflowed infinity's sign below
  } else if (ec != std::errc() || p != b + body.size()) {
    return Fail(start,
                "expected a number " + std::string(what) + ", got '" + std::string(tok) + "'");
  }
  if (neg) *out = -*out;
  return true;
}

bool Parser::ParseIntList(std::vector<int64_t>* out, char open, char close, std::string_view what) {
  if (!Expect(open, "to start " + std::string(what))) return false;
  out->clear();
  if (TryEat(close)) return true;
  do {
    int64_t v;
    if (!ParseInt(&v, "in " + std::string(what))) return false;
    out->push_back(v);
  } while (TryEat(','));
  return Expect(close, "to end " + std::string(what));
}

bool Parser::ParseQuoted(std::string* out) {
  size_t start = pos_;
  if (PeekRaw() != '"') return FailHere("expected a string");
  ++pos_;
  out->clear();
  while (pos_ < text_.size() && text_[pos_] != '"') {
    if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
    out->push_back(text_[pos_++]);
  }
  if (pos_ >= text_.size()) return Fail(start, "unterminated string");
  ++pos_;
  return true;
}

// Skips a balanced {...}, [...] or (...) group starting at `start`, honoring strings.
bool Parser::CaptureBalanced(size_t start) {
  std::string stack;
  pos_ = start;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') {
      std::string ignored;
      if (!ParseQuoted(&ignored)) return false;
      continue;
    }
    if (c == '{' || c == '[' || c == '(') {
      if (stack.size() >= static_cast<size_t>(kMaxNestingDepth)) {
        return Fail(pos_, "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels");
      }
      stack.push_back(c == '{' ? '}' : c == '[' ? ']' : ')');
    } else if (c == '}' || c == ']' || c == ')') {
      if (stack.empty() || stack.back() != c) {
        return Fail(pos_, std::string("unbalanced '") + c + "'");
      }
      stack.pop_back();
      if (stack.empty()) {
        ++pos_;
        return true;
      }
    }
    ++pos_;
  }
  return Fail(start, std::string("unterminated '") + text_[start] + "'");
}

// The verbatim text of an attribute value: a string, a balanced group, or a bare token.
bool Parser::CaptureRaw(std::string* out) {
  SkipSpace();
  size_t start = pos_;
  char c = PeekRaw();
  if (c == '"') {
    std::string ignored;
    if (!ParseQuoted(&ignored)) return false;
  } else if (c == '{' || c == '[' || c == '(') {
    if (!CaptureBalanced(start)) return false;
  } else {
    while (pos_ < text_.size()) {
      char d = text_[pos_];
      if (d == ',' || d == ' ' || d == '\n' || d == '\t' || d == '\r' || d == '}' || d == ')' ||
          d == ']' || d == '"' || d == '/') {
        break;
      }
      if (d == '{' || d == '[' || d == '(') {
        if (!CaptureBalanced(pos_)) return false;
        continue;
      }
      ++pos_;
    }
    if (pos_ == start) return FailHere("expected an attribute value");
  }
  *out = std::string(text_.substr(start, pos_ - start));
  return true;
}

}  // namespace tpusim::hlo::internal
