// Printing of attribute values and literals.
#include <charconv>
#include <cmath>

#include "compiler/hlo/printer.h"

namespace tpusim::hlo {
namespace {

std::string Join(const std::vector<int64_t>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}

std::string WindowField(const Window& w, std::string_view key, int64_t WindowDim::*field,
                        int64_t dflt) {
  bool any = key == "size";
  std::vector<int64_t> v;
  for (const WindowDim& d : w.dims) {
    v.push_back(d.*field);
    any |= d.*field != dflt;
  }
  return any ? " " + std::string(key) + "=" + Join(v, "x") : "";
}

std::string PrintWindow(const Window& w) {
  // A window without dimensions (a 1x1 convolution over no spatial dimension) reads back as
  // {} (found by the parser fuzzer: "{size=}" did not parse).
  if (w.dims.empty()) return "{}";
  std::string out = "{";
  out += WindowField(w, "size", &WindowDim::size, 1);
  out += WindowField(w, "stride", &WindowDim::stride, 1);
  bool pad = false, rev = false;
  std::string pads, revs;
  for (const WindowDim& d : w.dims) {
    pad |= d.pad_low != 0 || d.pad_high != 0;
    rev |= d.reversal;
    if (!pads.empty()) pads += 'x', revs += 'x';
    pads += std::to_string(d.pad_low) + "_" + std::to_string(d.pad_high);
    revs += d.reversal ? '1' : '0';
  }
  if (pad) out += " pad=" + pads;
  out += WindowField(w, "lhs_dilate", &WindowDim::lhs_dilate, 1);
  out += WindowField(w, "rhs_dilate", &WindowDim::rhs_dilate, 1);
  if (rev) out += " rhs_reversal=" + revs;
  if (out.size() > 1) out.erase(1, 1);  // leading space
  return out + "}";
}

struct ValuePrinter {
  std::string operator()(int64_t v) const { return std::to_string(v); }
  std::string operator()(double v) const { return FormatDouble(v); }
  std::string operator()(const Word& w) const { return w.text; }
  std::string operator()(const RawText& r) const { return r.text; }
  std::string operator()(const WordList& v) const {
    std::string out = "{";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
    return out + "}";
  }
  std::string operator()(const IntList& v) const { return "{" + Join(v, ",") + "}"; }
  std::string operator()(const SliceBounds& v) const {
    std::string out = "{";
    for (size_t i = 0; i < v.size(); ++i) {
      out += (i ? ", [" : "[") + std::to_string(v[i].start) + ":" + std::to_string(v[i].limit);
      if (v[i].stride != 1) out += ":" + std::to_string(v[i].stride);
      out += "]";
    }
    return out + "}";
  }
  std::string operator()(const PaddingConfig& v) const {
    bool interior = false;
    for (const PadDim& d : v) interior |= d.interior != 0;
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += 'x';
      out += std::to_string(v[i].low) + "_" + std::to_string(v[i].high);
      if (interior) out += "_" + std::to_string(v[i].interior);
    }
    return out;
  }
  std::string operator()(const Window& w) const { return PrintWindow(w); }
  std::string operator()(const ConvDims& c) const { return c.labels; }
  std::string operator()(const ReplicaGroups& g) const {
    if (!g.mesh.empty()) return g.mesh;
    if (g.iota) {
      std::string out =
          "[" + Join(g.iota_group_dims, ",") + "]<=[" + Join(g.iota_reshape_dims, ",") + "]";
      if (!g.iota_transpose.empty()) out += "T(" + Join(g.iota_transpose, ",") + ")";
      return out;
    }
    std::string out = "{";
    for (size_t i = 0; i < g.groups.size(); ++i) {
      out += (i ? ",{" : "{") + Join(g.groups[i], ",") + "}";
    }
    return out + "}";
  }
  std::string operator()(const PairList& v) const {
    std::string out = "{";
    for (size_t i = 0; i < v.size(); ++i) {
      out +=
          (i ? ",{" : "{") + std::to_string(v[i].first) + "," + std::to_string(v[i].second) + "}";
    }
    return out + "}";
  }
  std::string operator()(const ComputationRefs& r) const {
    std::string out;
    size_t n = std::max(r.names.size(), r.computations.size());
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ", ";
      out += "%" + (i < r.computations.size() && r.computations[i] ? r.computations[i]->name()
                                                                   : r.names[i]);
    }
    return r.braced ? "{" + out + "}" : out;
  }
};

}  // namespace

std::string FormatDouble(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, p) : "nan";
}

std::string PrintAttrValue(const AttrValue& value) { return std::visit(ValuePrinter{}, value); }

std::string PrintLiteral(const Shape& shape, const Literal& lit) {
  if (lit.elided) return "{...}";
  bool is_float = IsFloatingType(shape.type);
  bool complex = shape.type == PrimitiveType::kC64;
  auto value = [&](size_t i) -> std::string {
    if (complex) {
      if (2 * i + 1 >= lit.floats.size()) return "(0, 0)";
      return "(" + FormatDouble(lit.floats[2 * i]) + ", " + FormatDouble(lit.floats[2 * i + 1]) +
             ")";
    }
    if (is_float) return i < lit.floats.size() ? FormatDouble(lit.floats[i]) : "0";
    int64_t v = i < lit.ints.size() ? lit.ints[i] : 0;
    if (shape.type == PrimitiveType::kPred) return v ? "true" : "false";
    if (shape.type == PrimitiveType::kU64) return std::to_string(static_cast<uint64_t>(v));
    return std::to_string(v);
  };
  if (shape.dims.empty()) return value(0);
  if (shape.ElementCount() <= 0) return "{}";
  std::string out;
  size_t next = 0;
  auto rec = [&](auto&& self, size_t d) -> void {
    out += '{';
    for (int64_t i = 0; i < shape.dims[d]; ++i) {
      if (i) out += ", ";
      if (d + 1 == shape.dims.size()) {
        out += value(next++);
      } else {
        self(self, d + 1);
      }
    }
    out += '}';
  };
  rec(rec, 0);
  return out;
}

}  // namespace tpusim::hlo
