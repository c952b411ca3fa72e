#include "compiler/assembly/asm_util.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <sstream>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace tpusim::assembly {
namespace {

// [A-Za-z0-9_] by table: the scan below looks at every character of every kernel.
constexpr std::array<bool, 256> kNameChar = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c)
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  return t;
}();
bool IsNameChar(char c) { return kNameChar[static_cast<unsigned char>(c)]; }

// The names a kernel defines: "name:" labels, ".desc name", ".equ name".
std::unordered_set<std::string> DefinedNames(const std::string& kernel) {
  std::unordered_set<std::string> names;
  std::istringstream in(kernel);
  for (std::string line; std::getline(in, line);) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] == '#') continue;
    if (line.compare(i, 6, ".desc ") == 0 || line.compare(i, 5, ".equ ") == 0) {
      size_t b = line.find(' ', i) + 1, e = b;
      while (e < line.size() && IsNameChar(line[e])) ++e;
      names.insert(line.substr(b, e - b));
      continue;
    }
    size_t e = i;
    while (e < line.size() && IsNameChar(line[e])) ++e;
    if (e > i && e < line.size() && line[e] == ':') names.insert(line.substr(i, e - i));
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
  const std::unordered_set<std::string> names = DefinedNames(kernel);
  // Words whose first character starts no defined name (registers, mnemonics, numbers,
  // mostly) skip the set lookup.
  std::array<bool, 256> starts{};
  for (const std::string& n : names) starts[static_cast<unsigned char>(n[0])] = true;
  std::string out;
  out.reserve(kernel.size() + kernel.size() / 8);
  std::string word;
  for (size_t pos = 0; pos < kernel.size();) {
    size_t eol = kernel.find('\n', pos);
    if (eol == std::string::npos) eol = kernel.size();
    const std::string_view line(kernel.data() + pos, eol - pos);
    pos = eol + 1;
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line.substr(first, 4) == "halt") continue;
    // Code ends at a comment or a .tag string, whose text is kept as it is.
    const size_t end = std::min({line.find('#'), line.find('"'), line.size()});
    for (size_t i = 0; i < end;) {
      if (!IsNameChar(line[i])) {
        size_t j = i;
        while (j < end && !IsNameChar(line[j])) ++j;
        out.append(line.substr(i, j - i));
        i = j;
        continue;
      }
      size_t e = i;
      while (e < end && IsNameChar(line[e])) ++e;
      word.assign(line.substr(i, e - i));
      const bool key = e < line.size() && line[e] == '=';  // a .desc key, never a name
      if (!key && starts[static_cast<unsigned char>(word[0])] && names.count(word))
        out.append(prefix);
      out.append(word);
      i = e;
    }
    out.append(line.substr(end));
    out.push_back('\n');
  }
  return out;
}

std::string DrainBarrier(int mxus) { return DrainSignals(mxus) + DrainWait(mxus); }

std::string DropTrailingSeqWaits(const std::string& kernel) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < kernel.size();) {
    const size_t nl = std::min(kernel.find('\n', at), kernel.size());
    lines.emplace_back(kernel.data() + at, nl - at);
    at = nl + 1;
  }
  size_t cut = lines.size();  // lines [cut, end) go
  for (size_t k = lines.size(); k-- > 0;) {
    const size_t first = lines[k].find_first_not_of(" \t");
    if (first == std::string_view::npos || lines[k][first] == '#') continue;
    if (lines[k].substr(first).rfind("wait seq,", 0) != 0) break;
    cut = k;
  }
  if (cut == lines.size()) return kernel;
  std::string out;
  for (size_t k = 0; k < cut; ++k) out.append(lines[k]).push_back('\n');
  return out;
}

std::string DrainSignals(int mxus) {
  std::ostringstream s;
  const std::string f = "f" + std::to_string(kBarrierFlag);
  for (int m = 0; m < mxus; ++m) s << "    signal mxu" << m << ", " << f << ", 1\n";
  s << "    signal vpu, " << f << ", 1\n    signal dma, " << f << ", 1\n";
  return s.str();
}

std::string DrainWait(int mxus) {
  std::ostringstream s;
  s << "    wait seq, f" << kBarrierFlag << ", " << mxus + 2 << "\n";
  // Every kernel starts with its flags at zero, whatever the one before left in them.
  for (int k = 0; k < kCollectiveFlagBase; ++k) s << "    sflag f" << k << ", 0\n";
  return s.str();
}

}  // namespace tpusim::assembly
