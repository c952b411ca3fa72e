#include "compiler/lowering/driver/op_context.h"

#include <algorithm>

namespace tpusim::lowering {

bool IsWord32(const hlo::Shape& s) {
  return s.IsArray() && (s.type == hlo::PrimitiveType::kF32 || s.type == hlo::PrimitiveType::kS32 ||
                         s.type == hlo::PrimitiveType::kU32);
}

int ElemBytes(const hlo::Shape& s) {
  const hlo::Shape* leaf = &s;
  while (leaf->IsTuple() && !leaf->tuple_shapes.empty()) leaf = &leaf->tuple_shapes[0];
  return std::max(1, hlo::PrimitiveTypeBits(leaf->type) / 8);
}

int64_t Elements(const hlo::Shape& s) {
  if (!s.IsTuple()) return s.ElementCount();
  int64_t n = 0;
  for (const hlo::Shape& t : s.tuple_shapes) n += Elements(t);
  return n;
}

uint64_t ByteSize(const hlo::Shape& shape) {
  if (shape.IsTuple()) {
    uint64_t n = 0;
    for (const hlo::Shape& t : shape.tuple_shapes) n += ByteSize(t);
    return n;
  }
  return static_cast<uint64_t>(shape.ElementCount()) * ElemBytes(shape);
}

}  // namespace tpusim::lowering
