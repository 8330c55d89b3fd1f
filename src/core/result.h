// Result<T>: a value or an Error (tl::expected's shape, C++20). The error carries the
// message and the input word it is about; the CLI prints it as
// `FILE:LINE: message (at "WORD")`.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace pktpath {

struct Error {
  static constexpr size_t kNoIndex = static_cast<size_t>(-1);
  std::string msg;
  std::string word;  // the input word the error is about; may be empty
  size_t index = kNoIndex;  // that word's position in its line, where a parser knows it
};

// What a failing function returns (std::unexpected's role).
struct Unexpected {
  Error error;
};
inline Unexpected unexpected(std::string msg, std::string word = {}) {
  return Unexpected{Error{std::move(msg), std::move(word)}};
}
inline Unexpected unexpected(Error e) { return Unexpected{std::move(e)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  template <class U = T>
    requires std::is_convertible_v<U&&, T>
  Result(U&& v) : v_(std::in_place_index<0>, std::forward<U>(v)) {}
  Result(Unexpected e) : v_(std::in_place_index<1>, std::move(e.error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  // The value, or `other` on an error (std::expected::value_or).
  template <class U>
  T value_or(U&& other) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(other));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Unexpected e) : err_(std::move(e.error)), ok_(false) {}
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace pktpath
