// Small deterministic formatting helpers shared by the writers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tpusim::traces {

// Appends s as a JSON string literal: quotes, backslashes and every control character
// escaped, so the output never holds a raw control character.
inline void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  out += '"';
}

inline std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

// Picoseconds as microseconds with six decimals, exact (integer arithmetic).
inline std::string MicrosFromPs(uint64_t ps) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%llu.%06llu", static_cast<unsigned long long>(ps / 1000000),
                static_cast<unsigned long long>(ps % 1000000));
  return buf;
}

// Fixed-point decimal with `digits` decimals ("-0.0" prints as "0.0").
inline std::string Fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

}  // namespace tpusim::traces
