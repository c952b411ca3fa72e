// eval::Value, the host evaluator's literal: an array of elements kept as doubles (each
// already rounded to its element type) or a tuple of values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compiler/hlo/shape.h"

namespace tpusim::eval {

using hlo::PrimitiveType;

// Rounds `x` to a value of type `t`: f32 via float, bf16 and f16 to nearest even, integers
// wrap modulo 2^bits (truncating a fraction toward zero), pred becomes 0 or 1.
double RoundTo(PrimitiveType t, double x);
// XLA convert: like RoundTo, but floating to integral saturates and maps NaN to 0.
double ConvertTo(PrimitiveType from, PrimitiveType to, double x);
// Raw bits of a value of type `t` and back (bitcast-convert).
uint64_t ToBits(PrimitiveType t, double x);
double FromBits(PrimitiveType t, uint64_t bits);

// Row-major helpers.
std::vector<int64_t> Strides(std::span<const int64_t> dims);
// Advances `index` to the next row-major position; false after the last one.
bool NextIndex(std::vector<int64_t>& index, std::span<const int64_t> dims);
int64_t Linear(std::span<const int64_t> index, std::span<const int64_t> strides);

struct Value {
  hlo::Shape shape;             // without layout
  std::vector<double> data;     // arrays: elements in row-major order
  std::vector<Value> elements;  // tuples

  // An array of zeros (or a tuple of them).
  static Value Zeros(const hlo::Shape& shape);
  static Value Scalar(PrimitiveType t, double x);
  // An array from row-major values, each rounded to the element type. Checks the count.
  static Value FromVector(const hlo::Shape& shape, std::vector<double> values);
  static Value FromVector(PrimitiveType t, std::vector<int64_t> dims, std::vector<double> values);
  static Value Tuple(std::vector<Value> elements);
  // Deterministic pseudo-random contents: floats uniform in [-1, 1), integers in [0, 16),
  // pred 0/1; tuples recursively.
  static Value Random(const hlo::Shape& shape, uint64_t seed);

  PrimitiveType type() const { return shape.type; }
  const std::vector<int64_t>& dims() const { return shape.dims; }
  bool IsTuple() const { return shape.IsTuple(); }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  double at(std::span<const int64_t> index) const;
  double scalar() const { return data.at(0); }
  // "f32[2]{1, 2}", tuples "(f32[] 1, s32[] 2)".
  std::string ToString() const;
  bool operator==(const Value& o) const {
    return shape.Compatible(o.shape) && data == o.data && elements == o.elements;
  }
};

}  // namespace tpusim::eval
