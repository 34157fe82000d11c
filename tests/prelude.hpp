// The one prelude every torch test file includes. LibTorch pulls in glog, whose CHECK macros
// silently replace doctest's when doctest comes first; tests would then assert nothing. So torch
// comes first, and the static_assert below proves doctest's CHECK won.
#ifndef DTL_TESTS_PRELUDE_HPP
#define DTL_TESTS_PRELUDE_HPP

#include <torch/torch.h>

#include <dtl/trainer.hpp>

#include <doctest/doctest.h>

#include <string_view>

#define DTL_TESTS_STR2(...) #__VA_ARGS__
#define DTL_TESTS_STR(...) DTL_TESTS_STR2(__VA_ARGS__)
static_assert(std::string_view(DTL_TESTS_STR(CHECK(1))).find("google") == std::string_view::npos &&
                  std::string_view(DTL_TESTS_STR(CHECK(1))).find("DOCTEST") != std::string_view::npos,
              "glog's CHECK replaced doctest's: include this prelude before any other test header");

#endif  // DTL_TESTS_PRELUDE_HPP
