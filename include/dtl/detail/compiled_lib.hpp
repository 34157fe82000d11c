// dtl — header-only by default, or compiled once into libdtl.
//
// Header-only (the default): every function is defined in the headers, and a translation unit
// that includes <dtl/trainer.hpp> parses and instantiates all of it, used or not.
//
// Compiled (DTL_COMPILED_LIB defined for the library and for every translation unit that uses
// it): the heavy non-template parts (checkpoint files, the experiment configuration, the
// distributed process group, TensorBoard files) are only declared in the headers and are
// compiled once, into libdtl, from src/dtl.cpp. Each such part has a declaring header (foo.hpp)
// and an implementation header (foo-inl.hpp) that foo.hpp includes only when header-only;
// DTL_INLINE marks both the declaration and the definition (`inline` header-only, nothing
// compiled). A header whose functions are few and light defines them in place as plain
// `inline` in both modes instead: the inline namespace (abi.hpp) already keeps the two modes'
// copies apart, so a split would save no compile time and cost a file.
// See docs/building.md, "Compiled or header-only".
#ifndef DTL_DETAIL_COMPILED_LIB_HPP
#define DTL_DETAIL_COMPILED_LIB_HPP

#include <dtl/detail/abi.hpp>

#ifdef DTL_COMPILED_LIB
#define DTL_INLINE
#else
#define DTL_INLINE inline
#endif

#endif  // DTL_DETAIL_COMPILED_LIB_HPP
