// Reading shardings from attributes: HLO's own form and Shardy's (#sdy.sharding<@mesh, ...>
// with the mesh from the module's xla.sdy.meshes), converted to HLO's mesh form.
#include "compiler/spmd/annotations.h"

#include <algorithm>

#include <map>

namespace tpusim::spmd {
namespace {

using hlo::HloSharding;
using hlo::Result;
using hlo::Status;

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

std::optional<std::string> RawValue(const std::vector<hlo::Attribute>& attrs,
                                    std::string_view key) {
  for (const hlo::Attribute& a : attrs) {
    if (a.key != key) continue;
    if (const auto* raw = std::get_if<hlo::RawText>(&a.value)) return raw->text;
  }
  return std::nullopt;
}

// Meshes of `{mesh = #sdy.mesh<["x"=8]>, m2 = #sdy.mesh<["a"=2, "b"=4]>}` as HLO mesh text
// (mesh['x'=8]), by name.
std::map<std::string, std::string> Meshes(const hlo::HloModule& m) {
  std::map<std::string, std::string> out;
  std::optional<std::string> fa = RawValue(m.header, "frontend_attributes");
  if (!fa) return out;
  std::string text = Unescape(*fa);
  size_t pos = 0;
  while ((pos = text.find("#sdy.mesh<[", pos)) != std::string::npos) {
    size_t eq = text.rfind('=', pos);
    size_t name_start = text.find_last_of("{, ", eq - 2);
    std::string name = text.substr(name_start + 1, eq - name_start - 1);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    size_t end = text.find("]", pos);
    if (end == std::string::npos) break;
    std::string axes = text.substr(pos + 11, end - pos - 11);
    for (char& c : axes) c = c == '"' ? '\'' : c;
    std::string compact;
    for (char c : axes) {
      if (c != ' ') compact += c;
    }
    out[name] = "mesh[" + compact + "]";
    pos = end;
  }
  return out;
}

// `<@mesh, [{"x"}, {}]>` (quotes unescaped) as an HloSharding.
Result<HloSharding> FromSdy(const std::map<std::string, std::string>& meshes,
                            std::string_view sdy) {
  size_t at = sdy.find('@'), comma = sdy.find(',', at);
  if (at == std::string_view::npos || comma == std::string_view::npos) {
    return Status::Error("bad Shardy sharding '" + std::string(sdy) + "'");
  }
  std::string mesh_name(sdy.substr(at + 1, comma - at - 1));
  auto it = meshes.find(mesh_name);
  if (it == meshes.end()) {
    return Status::Error("Shardy sharding '" + std::string(sdy) + "' names mesh @" + mesh_name +
                         ", which the module's xla.sdy.meshes lacks");
  }
  std::string rest(sdy.substr(comma, sdy.size() - comma - 1));  // ", [...]" without '>'
  for (char& c : rest) c = c == '"' ? '\'' : c;
  return hlo::ParseSharding("{" + it->second + rest + "}");
}

}  // namespace

std::optional<std::string> FrontendAttribute(const hlo::HloInstruction& i, std::string_view key) {
  const std::string* fa = i.RawAttr("frontend_attributes");
  if (!fa) return std::nullopt;
  std::string pattern = std::string(key) + "=\"";
  size_t b = fa->find(pattern);
  if (b == std::string::npos) return std::nullopt;
  b += pattern.size();
  size_t e = b;
  while (e < fa->size() && (*fa)[e] != '"') e += (*fa)[e] == '\\' ? 2 : 1;
  return Unescape(std::string_view(*fa).substr(b, e - b));
}

std::string CustomCallTarget(const hlo::HloInstruction& i) {
  if (i.opcode() != hlo::Opcode::kCustomCall) return "";
  const std::string* t = i.RawAttr("custom_call_target");
  if (!t) return "";
  std::string s = *t;
  if (s.size() >= 2 && s.front() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

Result<std::optional<HloSharding>> StatedSharding(const hlo::HloModule& m,
                                                  const hlo::HloInstruction& i) {
  auto named = [&](Result<HloSharding> r) -> Result<std::optional<HloSharding>> {
    if (!r.ok()) return Status::Error("%" + i.name() + ": " + r.status().message());
    return std::optional<HloSharding>(std::move(r.value()));
  };
  if (const std::string* raw = i.RawAttr("sharding")) return named(hlo::ParseSharding(*raw));
  if (std::optional<std::string> sdy = FrontendAttribute(i, "xla.sdy.sharding")) {
    if (sdy->find("sharding_per_value") == std::string::npos)
      return named(FromSdy(Meshes(m), *sdy));
    Result<std::vector<HloSharding>> all = SdyShardings(m, i, "xla.sdy.sharding");
    if (!all.ok()) return all.status();
    if (all->size() == 1) return std::optional<HloSharding>(all->front());
    HloSharding tuple;
    tuple.kind = HloSharding::Kind::kTuple;
    tuple.elements = std::move(all.value());
    return std::optional<HloSharding>(std::move(tuple));
  }
  return std::optional<HloSharding>();
}

Result<std::vector<HloSharding>> SdyShardings(const hlo::HloModule& m, const hlo::HloInstruction& i,
                                              std::string_view key) {
  std::vector<HloSharding> out;
  std::optional<std::string> v = FrontendAttribute(i, key);
  if (!v) return out;
  std::map<std::string, std::string> meshes = Meshes(m);
  size_t pos = v->find("[<");
  while (pos != std::string::npos && pos < v->size()) {
    size_t b = v->find('<', pos);
    if (b == std::string::npos) break;
    int depth = 0;
    size_t e = b;
    for (; e < v->size(); ++e) {
      depth += (*v)[e] == '<' ? 1 : (*v)[e] == '>' ? -1 : 0;
      if (depth == 0) break;
    }
    Result<HloSharding> s = FromSdy(meshes, std::string_view(*v).substr(b, e - b + 1));
    if (!s.ok()) return Status::Error("%" + i.name() + ": " + s.status().message());
    out.push_back(std::move(s.value()));
    pos = v->find('<', e + 1);
  }
  return out;
}

namespace {
bool Splits(const hlo::HloSharding& s) {
  if (s.kind == hlo::HloSharding::Kind::kTuple) {
    return std::any_of(s.elements.begin(), s.elements.end(), Splits);
  }
  return s.kind != hlo::HloSharding::Kind::kReplicated;
}
}  // namespace

bool StatesSplit(const hlo::HloModule& m) {
  for (const auto& c : m.computations()) {
    for (const auto& i : c->instructions()) {
      if (!CustomCallTarget(*i).empty()) return true;
      hlo::Result<std::optional<hlo::HloSharding>> s = StatedSharding(m, *i);
      if (!s.ok() || (s.value() && Splits(**s))) return true;
    }
  }
  return false;
}

bool IsScheduled(const hlo::HloModule& m) {
  for (const hlo::Attribute& a : m.header) {
    const auto* raw = std::get_if<hlo::RawText>(&a.value);
    if (a.key == "is_scheduled" && raw && raw->text == "true") return true;
  }
  return false;
}

}  // namespace tpusim::spmd
