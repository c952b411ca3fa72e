#include "traces/trace_validator.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace tpusim::traces {
namespace {

using nlohmann::json;

// Raw control characters inside string literals (JSON forbids them; parsers differ).
void CheckControlChars(std::string_view text, std::vector<std::string>& out) {
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (in_string && c == '\\') {
      ++i;
    } else if (c == '"') {
      in_string = !in_string;
    } else if (in_string && c < 0x20) {
      out.push_back("raw control character in a string at byte " + std::to_string(i));
      return;
    }
  }
}

struct Span {
  double ts, end;
  size_t index;
};

void CheckNesting(std::map<std::pair<int64_t, int64_t>, std::vector<Span>>& tracks,
                  std::vector<std::string>& out) {
  constexpr double kEps = 1e-9;  // microseconds: one femtosecond
  for (auto& [key, spans] : tracks) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.end > b.end;
    });
    std::vector<Span> stack;
    for (const Span& s : spans) {
      while (!stack.empty() && stack.back().end <= s.ts + kEps) stack.pop_back();
      if (!stack.empty() && s.end > stack.back().end + kEps) {
        out.push_back("event " + std::to_string(s.index) + " partially overlaps event " +
                      std::to_string(stack.back().index) + " on pid " + std::to_string(key.first) +
                      " tid " + std::to_string(key.second));
      }
      stack.push_back(s);
    }
  }
}

}  // namespace

std::vector<std::string> ValidateChromeTrace(std::string_view text) {
  std::vector<std::string> out;
  CheckControlChars(text, out);
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    out.push_back("not valid JSON");
    return out;
  }
  if (!doc.is_object()) return {"not the object form {\"traceEvents\":[...]}"};
  if (doc.value("displayTimeUnit", "") != "ns") out.push_back("displayTimeUnit is not \"ns\"");
  if (!doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    out.push_back("traceEvents is missing or not an array");
    return out;
  }
  std::set<int64_t> pids_named;
  std::set<std::pair<int64_t, int64_t>> tids_named;
  std::set<int64_t> pids_used;
  std::set<std::pair<int64_t, int64_t>> tids_used;
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> tracks;
  const json& events = doc["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    const std::string at = "event " + std::to_string(i) + ": ";
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) {
      out.push_back(at + "no ph");
      continue;
    }
    const std::string ph = e["ph"];
    const int64_t pid = e.value("pid", int64_t{-1});
    const bool has_tid = e.contains("tid") && e["tid"].is_number_integer();
    const int64_t tid = has_tid ? e["tid"].get<int64_t>() : -1;
    if (!e.contains("pid") || !e["pid"].is_number_integer()) out.push_back(at + "no integer pid");
    if (ph == "M") {
      const std::string name = e.value("name", "");
      const bool named =
          e.contains("args") && e["args"].contains("name") && e["args"]["name"].is_string();
      if (name == "process_name" && named) pids_named.insert(pid);
      if (name == "thread_name" && named) tids_named.insert({pid, tid});
      continue;
    }
    pids_used.insert(pid);
    if (!e.contains("ts") || !e["ts"].is_number() || e["ts"].get<double>() < 0) {
      out.push_back(at + "ts missing or negative");
      continue;
    }
    const double ts = e["ts"];
    if (ph == "X") {
      if (!has_tid) out.push_back(at + "complete event without tid");
      tids_used.insert({pid, tid});
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
        out.push_back(at + "complete event without dur >= 0");
        continue;
      }
      tracks[{pid, tid}].push_back({ts, ts + e["dur"].get<double>(), i});
    } else if (ph == "C") {
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
        out.push_back(at + "counter without args");
      } else {
        for (const auto& [k, v] : e["args"].items()) {
          if (!v.is_number()) out.push_back(at + "counter value " + k + " is not numeric");
        }
      }
    } else if (has_tid) {
      tids_used.insert({pid, tid});
    }
  }
  for (int64_t pid : pids_used) {
    if (!pids_named.count(pid))
      out.push_back("pid " + std::to_string(pid) + " has no process_name");
  }
  for (const auto& [pid, tid] : tids_used) {
    if (!tids_named.count({pid, tid})) {
      out.push_back("pid " + std::to_string(pid) + " tid " + std::to_string(tid) +
                    " has no thread_name");
    }
  }
  CheckNesting(tracks, out);
  return out;
}

std::vector<std::string> ValidateChromeTraceFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {"cannot open " + path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ValidateChromeTrace(ss.str());
}

}  // namespace tpusim::traces
