// Error reporting for the ISA toolchain: a located message and a value-or-error Result.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tpusim::isa {

// A failure with where it happened. `message` is complete and ready to print:
// "file:line:column: reason" for assembly text, "offset N: reason" for binaries.
// `reason` is the bare text without the location.
struct Error {
  std::string message;
  std::string reason;
  int line = 0;       // 1-based; 0 when not from text
  int column = 0;     // 1-based
  size_t offset = 0;  // byte offset, for binaries

  static Error AtText(std::string_view file, int line, int column, std::string reason) {
    Error e;
    e.message = std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) +
                ": " + reason;
    e.reason = std::move(reason);
    e.line = line;
    e.column = column;
    return e;
  }
  static Error AtOffset(size_t offset, std::string reason) {
    Error e;
    e.message = "offset " + std::to_string(offset) + ": " + reason;
    e.reason = std::move(reason);
    e.offset = offset;
    return e;
  }
};

// Either a T or an Error (C++20 has no std::expected).
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace tpusim::isa
