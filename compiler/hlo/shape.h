// HLO shapes: element type, static dimensions, optional layout (minor_to_major, tiles,
// memory space), or a tuple of shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::hlo {

enum class PrimitiveType : uint8_t {
  kPred,
  kS8,
  kS16,
  kS32,
  kS64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kC64,
  kTuple,
};

std::string_view PrimitiveTypeName(PrimitiveType t);  // "f32", "bf16", "(tuple)"
std::optional<PrimitiveType> LookupPrimitiveType(std::string_view name);
int PrimitiveTypeBits(PrimitiveType t);  // 0 for tuple
bool IsFloatingType(PrimitiveType t);    // f16, bf16, f32, f64, c64
bool IsIntegralType(PrimitiveType t);    // signed and unsigned integers, not pred

// One tile of a tiled layout, e.g. T(8,128); a dimension of -1 prints as '*'.
struct Tile {
  std::vector<int64_t> dims;
  bool operator==(const Tile&) const = default;
};

struct Layout {
  std::vector<int64_t> minor_to_major;
  std::vector<Tile> tiles;        // T(8,128)(2,1)
  int64_t memory_space = 0;       // S(1); 0 is the default (HBM)
  int64_t element_size_bits = 0;  // E(4); 0 when absent
  bool operator==(const Layout&) const = default;
};

struct Shape {
  PrimitiveType type = PrimitiveType::kF32;
  std::vector<int64_t> dims;        // arrays only
  std::optional<Layout> layout;     // arrays only, when the text gave one
  std::vector<Shape> tuple_shapes;  // tuples only

  static Shape Array(PrimitiveType t, std::vector<int64_t> dims) {
    Shape s;
    s.type = t;
    s.dims = std::move(dims);
    return s;
  }
  static Shape Tuple(std::vector<Shape> elements) {
    Shape s;
    s.type = PrimitiveType::kTuple;
    s.tuple_shapes = std::move(elements);
    return s;
  }
  bool IsTuple() const { return type == PrimitiveType::kTuple; }
  bool IsArray() const { return !IsTuple(); }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool IsScalar() const { return IsArray() && dims.empty(); }
  // Product of dims, or -1 on overflow past 2^62.
  int64_t ElementCount() const;
  // Same types and dimensions (recursively), ignoring layouts.
  bool Compatible(const Shape& other) const;
  bool operator==(const Shape&) const = default;  // including layouts
  // XLA text: "f32[2,3]{1,0:T(8,128)}", "(f32[], s32[2])".
  std::string ToString(bool with_layout = true) const;
};

}  // namespace tpusim::hlo
