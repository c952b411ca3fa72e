// Status and Result<T>: how every function of the HLO front end reports failure. A failed
// Status carries a complete message (for parse errors "file:line:column: what went wrong").
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tpusim::hlo {

class Status {
 public:
  Status() = default;  // success
  static Status Ok() { return Status(); }
  static Status Error(std::string message, int line = 0, int column = 0) {
    Status s;
    s.ok_ = false;
    s.message_ = std::move(message);
    s.line_ = line;
    s.column_ = column;
    return s;
  }
  bool ok() const { return ok_; }
  const std::string& message() const { return message_; }
  // Source position of a parse error (1-based), 0 when unknown.
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  bool ok_ = true;
  std::string message_;
  int line_ = 0;
  int column_ = 0;
};

// Either a value or a failed Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must be a failed status
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tpusim::hlo
