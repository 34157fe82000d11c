// dtl — the inline namespace every dtl name lives in: dtl::v0_<mode>_torch<major>, e.g.
// dtl::v0_header_only_torch2::Trainer. It carries what must agree across a program: header-only
// or compiled (DTL_COMPILED_LIB, docs/building.md) and LibTorch's major version. A translation
// unit compiled in one way and libdtl (or another translation unit) built in the other then name
// different symbols, so the program fails to link instead of running with two definitions of one
// function. Code names dtl::Trainer as ever; the inline namespace shows in symbols and in some
// compiler messages.
#ifndef DTL_DETAIL_ABI_HPP
#define DTL_DETAIL_ABI_HPP

#if __has_include(<torch/version.h>)
#include <torch/version.h>
#define DTL_ABI_TORCH TORCH_VERSION_MAJOR
#else  // a torch-free translation unit (config, samplers) built without LibTorch's include path
#define DTL_ABI_TORCH 0
#endif

#ifdef DTL_COMPILED_LIB
#define DTL_ABI_MODE compiled
#else
#define DTL_ABI_MODE header_only
#endif

#define DTL_ABI_NAME2(mode, torch) v0_##mode##_torch##torch
#define DTL_ABI_NAME(mode, torch) DTL_ABI_NAME2(mode, torch)
/// The inline namespace's name: `namespace dtl { inline namespace DTL_ABI { ... } }`. Headers open
/// it one namespace a line, not in C++20's `namespace dtl::inline DTL_ABI {`, which tag-based code
/// tools (ctags) cannot parse (tests/tools/ctags_test.sh).
#define DTL_ABI DTL_ABI_NAME(DTL_ABI_MODE, DTL_ABI_TORCH)
#define DTL_ABI_STR2(x) #x
#define DTL_ABI_STR(x) DTL_ABI_STR2(x)
/// The same as a string literal, e.g. "v0_header_only_torch2".
#define DTL_ABI_STRING DTL_ABI_STR(DTL_ABI)

#endif  // DTL_DETAIL_ABI_HPP
