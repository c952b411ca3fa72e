#include "compiler/lowering/asm_util.h"

#include <cctype>
#include <map>
#include <sstream>

namespace tpusim::lowering {
namespace {

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The names a kernel defines: "name:" labels, ".desc name", ".equ name".
std::map<std::string, bool> DefinedNames(const std::string& kernel) {
  std::map<std::string, bool> names;
  std::istringstream in(kernel);
  for (std::string line; std::getline(in, line);) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] == '#') continue;
    if (line.compare(i, 6, ".desc ") == 0 || line.compare(i, 5, ".equ ") == 0) {
      size_t b = line.find(' ', i) + 1, e = b;
      while (e < line.size() && IsNameChar(line[e])) ++e;
      names[line.substr(b, e - b)] = true;
      continue;
    }
    size_t e = i;
    while (e < line.size() && IsNameChar(line[e])) ++e;
    if (e > i && e < line.size() && line[e] == ':') names[line.substr(i, e - i)] = true;
  }
  return names;
}

}  // namespace

std::string LoadAddress(int rd, uint64_t value, int scratch) {
  const std::string r = "r" + std::to_string(rd), t = "r" + std::to_string(scratch);
  if (value < (uint64_t{1} << 31)) return "    li " + r + ", " + std::to_string(value) + "\n";
  // value = high << 24 | low, both below 2^31.
  const uint64_t high = value >> 24, low = value & 0xffffff;
  return "    li " + r + ", " + std::to_string(high) + "\n    shli " + r + ", " + r +
         ", 24\n    li " + t + ", " + std::to_string(low) + "\n    or " + r + ", " + r + ", " + t +
         "\n";
}

std::string ScopeKernel(const std::string& kernel, const std::string& prefix) {
  const std::map<std::string, bool> names = DefinedNames(kernel);
  std::ostringstream out;
  std::istringstream in(kernel);
  for (std::string line; std::getline(in, line);) {
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line.compare(first, 4, "halt") == 0) continue;
    const size_t comment = line.find('#');
    const size_t quote = line.find('"');  // .tag strings keep their text
    const size_t end = std::min(comment, quote);
    std::string code = line.substr(0, std::min(end, line.size()));
    std::string rest = end < line.size() ? line.substr(end) : "";
    std::string scoped;
    for (size_t i = 0; i < code.size();) {
      if (!IsNameChar(code[i]) || (i > 0 && IsNameChar(code[i - 1]))) {
        scoped += code[i++];
        continue;
      }
      size_t e = i;
      while (e < code.size() && IsNameChar(code[e])) ++e;
      std::string word = code.substr(i, e - i);
      const bool key = e < code.size() && code[e] == '=';  // a .desc key, never a name
      scoped += names.count(word) && !key ? prefix + word : word;
      i = e;
    }
    out << scoped << rest << "\n";
  }
  return out.str();
}

std::string DrainBarrier(int mxus) {
  std::ostringstream s;
  const std::string f = "f" + std::to_string(kBarrierFlag);
  for (int m = 0; m < mxus; ++m) s << "    signal mxu" << m << ", " << f << ", 1\n";
  s << "    signal vpu, " << f << ", 1\n    signal dma, " << f << ", 1\n"
    << "    wait seq, " << f << ", " << mxus + 2 << "\n";
  return s.str();
}

}  // namespace tpusim::lowering
