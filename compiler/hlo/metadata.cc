#include "compiler/hlo/metadata.h"

#include <cctype>
#include <charconv>
#include <string_view>

namespace tpusim::hlo {
namespace {

// key=value pairs of `text` (braces around it allowed); a value is a quoted string with
// backslash escapes or a bare token. Calls `f(key, value)` for each.
template <typename F>
void ForEachField(std::string_view text, F f) {
  size_t p = 0;
  const auto skip = [&] {
    while (p < text.size() && (std::isspace(static_cast<unsigned char>(text[p])) ||
                               text[p] == '{' || text[p] == '}' || text[p] == ','))
      ++p;
  };
  for (skip(); p < text.size(); skip()) {
    const size_t key_start = p;
    while (p < text.size() && text[p] != '=' && !std::isspace(static_cast<unsigned char>(text[p])))
      ++p;
    const std::string_view key = text.substr(key_start, p - key_start);
    if (p >= text.size() || text[p] != '=') continue;
    ++p;
    std::string value;
    if (p < text.size() && text[p] == '"') {
      for (++p; p < text.size() && text[p] != '"'; ++p) {
        if (text[p] == '\\' && p + 1 < text.size()) ++p;
        value += text[p];
      }
      ++p;  // the closing quote
    } else {
      while (p < text.size() && !std::isspace(static_cast<unsigned char>(text[p])) &&
             text[p] != '}' && text[p] != ',')
        value += text[p++];
    }
    f(key, value);
  }
}

int64_t ToInt(const std::string& s) {
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

OpMetadata MetadataOf(const HloInstruction& i) {
  const std::string* raw = i.RawAttr("metadata");
  if (!raw && i.opcode() == Opcode::kFusion && i.fused_computation() &&
      i.fused_computation()->root()) {
    return MetadataOf(*i.fused_computation()->root());
  }
  OpMetadata m;
  if (!raw) return m;
  ForEachField(*raw, [&](std::string_view key, const std::string& value) {
    if (key == "op_type") m.op_type = value;
    if (key == "op_name") m.op_name = value;
    if (key == "source_file") m.source_file = value;
    if (key == "source_line") m.source_line = ToInt(value);
    if (key == "stack_frame_id") m.stack_frame_id = ToInt(value);
  });
  return m;
}

std::string SourceLocation(const HloModule& module, const HloInstruction& i) {
  const OpMetadata m = MetadataOf(i);
  if (!m.source_file.empty()) return m.source_file + ":" + std::to_string(m.source_line);
  if (m.stack_frame_id > 0) {
    const std::vector<SourceFrame> frames =
        ResolveStackFrame(module.stack_frames, m.stack_frame_id);
    if (frames.empty()) return "";
    const SourceFrame* pick = &frames.front();
    for (const SourceFrame& f : frames) {  // the user's own line before flax's or optax's
      if (f.file.find("site-packages/") == std::string::npos &&
          f.file.find("dist-packages/") == std::string::npos) {
        pick = &f;
        break;
      }
    }
    return pick->file + ":" + std::to_string(pick->line);
  }
  return "";
}

}  // namespace tpusim::hlo
