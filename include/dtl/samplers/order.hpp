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

#define DTL_SAMPLERS_RIGHT_ORDER \
  "sequential(n) | shuffle(seed) | repeat() | shard(rank, world) | batch(size) | skip(k)"

namespace dtl::inline DTL_ABI::detail {

/// True when `Stage` may follow a pipeline whose last stage is `Node`; otherwise a static_assert
/// explains the rule (and the function returns false so no further errors pile up).
template <class Node, class Stage>
consteval bool check_order() {
  constexpr bool is_shuffle = std::is_same_v<Stage, samplers::shuffle_stage>;
  constexpr bool is_repeat = std::is_same_v<Stage, samplers::repeat_stage>;
  constexpr bool is_batch = std::is_same_v<Stage, samplers::batch_stage>;
  if constexpr (is_shuffle && Node::has_repeat) {
    static_assert(always_false<Stage>,
                  "dtl: shuffle() after repeat() never ends an epoch, so the shuffle would never finish. Put "
                  "shuffle() before repeat(): " DTL_SAMPLERS_RIGHT_ORDER);
    return false;
  } else if constexpr (is_batch && Node::has_skip) {
    static_assert(always_false<Stage>,
                  "dtl: batch() after skip() would count the skip in records, but Determined counts batches (the "
                  "skip is the number of batches already trained). Put batch() before skip(): " DTL_SAMPLERS_RIGHT_ORDER);
    return false;
  } else if constexpr (is_repeat && Node::has_skip) {
    static_assert(always_false<Stage>,
                  "dtl: skip() must be the last stage: skip() before repeat() would skip again in every epoch. Put "
                  "skip() last: " DTL_SAMPLERS_RIGHT_ORDER);
    return false;
  } else if constexpr (Node::has_skip) {
    static_assert(always_false<Stage>,
                  "dtl: skip() must be the last stage, so that it counts what the trainer consumed (batches) and "
                  "happens once. Put skip() last: " DTL_SAMPLERS_RIGHT_ORDER);
    return false;
  } else if constexpr (is_repeat && Node::has_shard) {
    static_assert(always_false<Stage>,
                  "dtl: shard() before repeat() lets the ranks drift apart: a rank with a shorter shard starts its "
                  "next epoch early, and the ranks' lengths stop matching. Put shard() after repeat(): " DTL_SAMPLERS_RIGHT_ORDER);
    return false;
  } else if constexpr (is_repeat && Node::has_repeat) {
    static_assert(always_false<Stage>,
                  "dtl: repeat() twice: the first repeat() never ends, so the second does nothing. Keep one "
                  "repeat(): " DTL_SAMPLERS_RIGHT_ORDER);
    return false;
  } else if constexpr (is_batch && Node::has_batch) {
    static_assert(always_false<Stage>,
                  "dtl: batch() twice would make batches of batches, which dtl's samplers do not support. Use one "
                  "batch(size): " DTL_SAMPLERS_RIGHT_ORDER);
    return false;
  } else {
    return true;
  }
}

}  // namespace dtl::detail

#undef DTL_SAMPLERS_RIGHT_ORDER

#endif  // DTL_SAMPLERS_ORDER_HPP
