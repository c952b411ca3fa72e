// Shapes, layouts and constant literals of the HLO parser.
#include <algorithm>
#include <charconv>

#include "compiler/hlo/parse/parser_impl.h"
#include "compiler/hlo/parser.h"

namespace tpusim::hlo::internal {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 40;
// 1 PiB, far beyond any board's HBM: byte counts of shapes, padded to tiles (at most 2^10
// times larger), still fit an int64.
constexpr int64_t kMaxShapeBytes = int64_t{1} << 50;
constexpr const char* kDynamicMsg =
    "dynamic shapes are not supported: TPU programs need static shapes; pad to a fixed size";

}  // namespace

bool Parser::LooksLikeShape() {
  if (Peek() == '(') return true;
  std::string_view id = PeekIdent();
  return !id.empty() && pos_ + id.size() < text_.size() && text_[pos_ + id.size()] == '[';
}

bool Parser::ParseShape(Shape* out) {
  if (!Enter()) return false;
  struct Guard {
    Parser* p;
    ~Guard() { p->Leave(); }
  } guard{this};
  if (TryEat('(')) {
    *out = Shape::Tuple({});
    if (TryEat(')')) return true;
    do {
      Shape element;
      if (!ParseShape(&element)) return false;
      out->tuple_shapes.push_back(std::move(element));
    } while (TryEat(','));
    return Expect(')', "to end the tuple shape");
  }
  size_t type_pos = (SkipSpace(), pos_);
  std::string type_name;
  if (!ParseIdent(&type_name, "a shape such as f32[2,3]")) return false;
  std::optional<PrimitiveType> type = LookupPrimitiveType(type_name);
  if (!type) return Fail(type_pos, "unsupported element type '" + type_name + "'");
  *out = Shape::Array(*type, {});
  if (PeekRaw() != '[') return FailHere("expected '[' after element type " + type_name);
  ++pos_;
  if (!TryEat(']')) {
    do {
      char c = Peek();
      if (c == '<' || c == '?') return Fail(pos_, kDynamicMsg);
      int64_t d;
      size_t dpos = pos_;
      if (!ParseInt(&d, "as a dimension size")) return false;
      if (d < 0 || d > kMaxDim) return Fail(dpos, "invalid dimension size " + std::to_string(d));
      out->dims.push_back(d);
    } while (TryEat(','));
    if (!Expect(']', "to end the dimensions")) return false;
    // Element and byte counts must fit 64 bits with room for tile padding later on.
    int64_t bytes = std::max(1, PrimitiveTypeBits(*type) / 8);
    for (int64_t d : out->dims) {
      if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > kMaxShapeBytes) {
        return Fail(type_pos,
                    "shape " + out->ToString(false) + " holds more than 2^50 bytes (1 PiB)");
      }
    }
  }
  if (PeekRaw() == '{') {  // a layout follows only when attached to ']'
    Layout layout;
    size_t lpos = pos_;
    if (!ParseLayout(&layout)) return false;
    if (layout.minor_to_major.size() != out->dims.size()) {
      return Fail(lpos, "layout has " + std::to_string(layout.minor_to_major.size()) +
                            " dimensions but the shape has rank " + std::to_string(out->rank()));
    }
    // minor_to_major names every dimension once (found by the compiler fuzzer: {1,5} on a
    // rank-2 shape read past its dimensions in layout assignment).
    std::vector<bool> named(out->dims.size(), false);
    for (int64_t d : layout.minor_to_major) {
      if (d < 0 || d >= out->rank() || named[static_cast<size_t>(d)]) {
        return Fail(lpos, "layout's minor_to_major must name each of the shape's " +
                              std::to_string(out->rank()) + " dimensions once; " +
                              std::to_string(d) + " is out of range or repeated");
      }
      named[static_cast<size_t>(d)] = true;
    }
    out->layout = std::move(layout);
  }
  return true;
}

bool Parser::ParseLayout(Layout* out) {
  if (!Expect('{', "to start a layout")) return false;
  if (Peek() != ':' && Peek() != '}') {
    do {
      int64_t d;
      if (!ParseInt(&d, "in the layout")) return false;
      out->minor_to_major.push_back(d);
    } while (TryEat(','));
  }
  if (TryEat(':')) {
    while (Peek() != '}' && PeekRaw() != '\0') {
      size_t item_pos = pos_;
      char kind = text_[pos_++];
      if (kind == 'T') {
        while (Peek() == '(') {
          ++pos_;
          Tile tile;
          do {
            if (TryEat('*')) {
              tile.dims.push_back(-1);
              continue;
            }
            int64_t d;
            if (!ParseInt(&d, "in a tile")) return false;
            if (d <= 0) return Fail(item_pos, "tile dimensions must be positive");
            tile.dims.push_back(d);
          } while (TryEat(','));
          if (!Expect(')', "to end a tile")) return false;
          out->tiles.push_back(std::move(tile));
        }
        if (out->tiles.empty()) return Fail(item_pos, "expected '(' after T in a layout");
      } else if (kind == 'S' || kind == 'E') {
        int64_t v;
        if (!Expect('(', "after S or E in a layout") || !ParseInt(&v, "in the layout") ||
            !Expect(')', "in the layout")) {
          return false;
        }
        if (v < 0) return Fail(item_pos, "negative value in the layout");
        (kind == 'S' ? out->memory_space : out->element_size_bits) = v;
      } else {
        return Fail(item_pos, std::string("unsupported layout attribute '") + kind + "'");
      }
    }
  }
  return Expect('}', "to end the layout");
}

bool Parser::ParseLiteral(const Shape& shape, Literal* out) {
  if (shape.IsTuple()) return FailHere("tuple constants are not supported");
  size_t start = (SkipSpace(), pos_);
  if (PeekRaw() == '{') {
    size_t save = pos_;
    ++pos_;
    SkipSpace();
    if (text_.substr(pos_, 3) == "...") {
      pos_ += 3;
      out->elided = true;
      return Expect('}', "after '...' in an elided constant");
    }
    pos_ = save;
  }
  if (!ParseLiteralItems(shape, out)) return false;
  int64_t want = shape.ElementCount();
  int64_t have = static_cast<int64_t>(out->ints.size() + out->floats.size());
  if (shape.type == PrimitiveType::kC64) have /= 2;
  if (want != have) {
    return Fail(start, "constant has " + std::to_string(have) + " values but shape " +
                           shape.ToString(false) + " needs " + std::to_string(want));
  }
  return true;
}

bool Parser::ParseLiteralItems(const Shape& shape, Literal* out) {
  if (Peek() != '{') return ParseLiteralScalar(shape, out);
  if (!Enter()) return false;
  ++pos_;
  if (!TryEat('}')) {
    do {
      if (!ParseLiteralItems(shape, out)) return false;
    } while (TryEat(','));
    if (!Expect('}', "to end the constant's values")) return false;
  }
  Leave();
  return true;
}

bool Parser::ParseLiteralScalar(const Shape& shape, Literal* out) {
  size_t start = (SkipSpace(), pos_);
  if (out->ints.size() + out->floats.size() > text_.size()) return Fail(start, "too many values");
  PrimitiveType t = shape.type;
  if (t == PrimitiveType::kC64) {  // (re, im)
    double re, im;
    if (!Expect('(', "to start a complex value") || !ParseDouble(&re, "") ||
        !Expect(',', "in a complex value") || !ParseDouble(&im, "") ||
        !Expect(')', "to end a complex value")) {
      return false;
    }
    out->floats.push_back(re);
    out->floats.push_back(im);
    return true;
  }
  if (IsFloatingType(t)) {
    double v;
    if (!ParseDouble(&v, "in the constant")) return false;
    out->floats.push_back(v);
    return true;
  }
  if (TryKeyword("true")) {
    out->ints.push_back(1);
    return true;
  }
  if (TryKeyword("false")) {
    out->ints.push_back(0);
    return true;
  }
  std::string_view tok;
  if (!ParseNumberToken(&tok)) return false;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec == std::errc::result_out_of_range && tok[0] != '-') {
    uint64_t u = 0;
    auto [p2, ec2] = std::from_chars(tok.data(), tok.data() + tok.size(), u);
    if (ec2 == std::errc() && p2 == tok.data() + tok.size()) {
      out->ints.push_back(static_cast<int64_t>(u));
      return true;
    }
  }
  if (ec != std::errc() || p != tok.data() + tok.size()) {
    return Fail(start, "expected an integer value for " + std::string(PrimitiveTypeName(t)) +
                           ", got '" + std::string(tok) + "'");
  }
  out->ints.push_back(v);
  return true;
}

}  // namespace tpusim::hlo::internal
