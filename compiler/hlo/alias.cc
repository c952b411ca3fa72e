#include "compiler/hlo/alias.h"

#include <cctype>
#include <string>

namespace tpusim::hlo {
namespace {

// A cursor over the alias text; each Take* returns false on a mismatch.
struct Cursor {
  std::string_view s;
  size_t i = 0;
  void Skip() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool Take(char c) {
    Skip();
    if (i < s.size() && s[i] == c) return ++i, true;
    return false;
  }
  bool TakeInt(int64_t& v) {
    Skip();
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == i || j - i > 18) return false;
    v = std::stoll(std::string(s.substr(i, j - i)));
    i = j;
    return true;
  }
  bool TakeIndex(std::vector<int64_t>& index) {  // "{}" or "{1,2}"
    if (!Take('{')) return false;
    if (Take('}')) return true;
    do {
      int64_t v;
      if (!TakeInt(v)) return false;
      index.push_back(v);
    } while (Take(','));
    return Take('}');
  }
  bool TakeWord(std::string& w) {
    Skip();
    size_t j = i;
    while (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])) || s[j] == '-')) ++j;
    w = std::string(s.substr(i, j - i));
    i = j;
    return !w.empty();
  }
};

}  // namespace

Result<std::vector<InputOutputAlias>> ParseInputOutputAlias(std::string_view text) {
  std::vector<InputOutputAlias> out;
  Cursor c{text};
  c.Skip();
  while (c.i < text.size()) {
    InputOutputAlias a;
    std::string kind;
    const size_t at = c.i;
    if (!c.TakeIndex(a.output_index) || !c.Take(':') || !c.Take('(') || !c.TakeInt(a.parameter) ||
        !c.Take(',') || !c.TakeIndex(a.parameter_index)) {
      return Status::Error(
          "input_output_alias: expected '{output index}: (parameter, "
          "{parameter index}, kind)' at offset " +
          std::to_string(at));
    }
    if (c.Take(',')) {
      if (!c.TakeWord(kind) || (kind != "may-alias" && kind != "must-alias"))
        return Status::Error("input_output_alias: kind must be may-alias or must-alias, got '" +
                             kind + "'");
      a.must_alias = kind == "must-alias";
    }
    if (!c.Take(')'))
      return Status::Error("input_output_alias: expected ')' at offset " + std::to_string(c.i));
    out.push_back(std::move(a));
    if (!c.Take(',')) break;
  }
  c.Skip();
  if (c.i != text.size())
    return Status::Error("input_output_alias: unexpected text at offset " + std::to_string(c.i));
  return out;
}

}  // namespace tpusim::hlo
