// Checking error messages: the message of the exception a call throws, and whether a message
// says something. Torch-free, so torch-free and torch tests share it; header-only and inline, so
// the torch tests' unity build can include it from several files of one translation unit.
#ifndef DTL_TESTS_SUPPORT_ERRORS_HPP
#define DTL_TESTS_SUPPORT_ERRORS_HPP

#include <string>
#include <string_view>
#include <utility>

namespace test_support {

/// The message of the `E` that `f()` throws, or "<no error>" when it throws nothing. Any other
/// exception propagates, so doctest reports a call that throws the wrong type as that.
///   CHECK(contains(error_of<dtl::ConfigError>([&] { (void)load(path); }), "no such file"));
template <class E, class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

/// Whether `text` contains `part`.
inline bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace test_support

#endif  // DTL_TESTS_SUPPORT_ERRORS_HPP
