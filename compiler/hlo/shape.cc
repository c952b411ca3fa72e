#include "compiler/hlo/shape.h"

#include <array>

namespace tpusim::hlo {
namespace {

struct TypeInfo {
  PrimitiveType type;
  std::string_view name;
  int bits;
};

constexpr std::array<TypeInfo, 15> kTypes = {{
    {PrimitiveType::kPred, "pred", 8},
    {PrimitiveType::kS8, "s8", 8},
    {PrimitiveType::kS16, "s16", 16},
    {PrimitiveType::kS32, "s32", 32},
    {PrimitiveType::kS64, "s64", 64},
    {PrimitiveType::kU8, "u8", 8},
    {PrimitiveType::kU16, "u16", 16},
    {PrimitiveType::kU32, "u32", 32},
    {PrimitiveType::kU64, "u64", 64},
    {PrimitiveType::kF16, "f16", 16},
    {PrimitiveType::kBF16, "bf16", 16},
    {PrimitiveType::kF32, "f32", 32},
    {PrimitiveType::kF64, "f64", 64},
    {PrimitiveType::kC64, "c64", 64},
    {PrimitiveType::kTuple, "(tuple)", 0},
}};

void AppendInts(std::string& out, const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
}

}  // namespace

std::string_view PrimitiveTypeName(PrimitiveType t) { return kTypes[static_cast<size_t>(t)].name; }
int PrimitiveTypeBits(PrimitiveType t) { return kTypes[static_cast<size_t>(t)].bits; }

std::optional<PrimitiveType> LookupPrimitiveType(std::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (info.name == name && info.type != PrimitiveType::kTuple) return info.type;
  }
  return std::nullopt;
}

bool IsFloatingType(PrimitiveType t) {
  return t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF32 ||
         t == PrimitiveType::kF64 || t == PrimitiveType::kC64;
}

bool IsIntegralType(PrimitiveType t) { return t >= PrimitiveType::kS8 && t <= PrimitiveType::kU64; }

int64_t Shape::ElementCount() const {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && n > (int64_t{1} << 62) / d) return -1;
    n *= d;
  }
  return n;
}

bool Shape::Compatible(const Shape& other) const {
  if (type != other.type) return false;
  if (IsArray()) return dims == other.dims;
  if (tuple_shapes.size() != other.tuple_shapes.size()) return false;
  for (size_t i = 0; i < tuple_shapes.size(); ++i) {
    if (!tuple_shapes[i].Compatible(other.tuple_shapes[i])) return false;
  }
  return true;
}

std::string Shape::ToString(bool with_layout) const {
  std::string out;
  if (IsTuple()) {
    out += '(';
    for (size_t i = 0; i < tuple_shapes.size(); ++i) {
      if (i) out += ", ";
      out += tuple_shapes[i].ToString(with_layout);
    }
    out += ')';
    return out;
  }
  out += PrimitiveTypeName(type);
  out += '[';
  AppendInts(out, dims);
  out += ']';
  if (with_layout && layout) {
    out += '{';
    AppendInts(out, layout->minor_to_major);
    bool extra =
        !layout->tiles.empty() || layout->memory_space != 0 || layout->element_size_bits != 0;
    if (extra) out += ':';
    for (const Tile& t : layout->tiles) {
      out += (&t == &layout->tiles.front()) ? "T(" : "(";
      for (size_t i = 0; i < t.dims.size(); ++i) {
        if (i) out += ',';
        out += t.dims[i] < 0 ? std::string("*") : std::to_string(t.dims[i]);
      }
      out += ')';
    }
    if (layout->element_size_bits) out += "E(" + std::to_string(layout->element_size_bits) + ")";
    if (layout->memory_space) out += "S(" + std::to_string(layout->memory_space) + ")";
    out += '}';
  }
  return out;
}

}  // namespace tpusim::hlo
