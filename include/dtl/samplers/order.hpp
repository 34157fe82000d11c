// dtl — the order grammar of sampler pipelines, checked at compile time.
//
// Determined documents the order its samplers must be chained in ("Customize a Reproducible
// Dataset"): shuffle first, repeat when training, shard after repeat, batch, skip last. Python finds
// out at run time (a shuffle that hangs, ranks that drift apart); dtl refuses to compile, with a
// message that names the rule and shows the right chain. Like stdexec's diagnostics, the checks
// run as an `if constexpr` ladder, so only the first broken rule is reported.
#ifndef DTL_SAMPLERS_ORDER_HPP
#define DTL_SAMPLERS_ORDER_HPP

#include <dtl/detail/abi.hpp>

#include <type_traits>

#include <dtl/samplers/batch.hpp>
#include <dtl/samplers/repeat.hpp>
#include <dtl/samplers/shard.hpp>
#include <dtl/samplers/shuffle.hpp>
#include <dtl/samplers/skip.hpp>

#include <dtl/detail/always_false.hpp>
#include <dtl/detail/diagnostics.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// True when `Stage` may follow a pipeline whose last stage is `Node`; otherwise a static_assert
/// explains the rule (and the function returns false so no further errors pile up).
template <class Node, class Stage>
consteval bool check_order() {
  constexpr bool is_shuffle = std::is_same_v<Stage, samplers::shuffle_stage>;
  constexpr bool is_repeat = std::is_same_v<Stage, samplers::repeat_stage>;
  constexpr bool is_batch = std::is_same_v<Stage, samplers::batch_stage>;
  if constexpr (is_shuffle && Node::has_repeat) {
    static_assert(always_false<Stage>, DTL_DIAG_SAMPLER_SHUFFLE_AFTER_REPEAT);
    return false;
  } else if constexpr (is_batch && Node::has_skip) {
    static_assert(always_false<Stage>, DTL_DIAG_SAMPLER_BATCH_AFTER_SKIP);
    return false;
  } else if constexpr (is_repeat && Node::has_skip) {
    static_assert(always_false<Stage>, DTL_DIAG_SAMPLER_SKIP_BEFORE_REPEAT);
    return false;
  } else if constexpr (Node::has_skip) {
    static_assert(always_false<Stage>, DTL_DIAG_SAMPLER_SKIP_NOT_LAST);
    return false;
  } else if constexpr (is_repeat && Node::has_shard) {
    static_assert(always_false<Stage>, DTL_DIAG_SAMPLER_SHARD_BEFORE_REPEAT);
    return false;
  } else if constexpr (is_repeat && Node::has_repeat) {
    static_assert(always_false<Stage>, DTL_DIAG_SAMPLER_REPEAT_TWICE);
    return false;
  } else if constexpr (is_batch && Node::has_batch) {
    static_assert(always_false<Stage>, DTL_DIAG_SAMPLER_BATCH_TWICE);
    return false;
  } else {
    return true;
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_ORDER_HPP
