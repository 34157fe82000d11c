// dtl — sampler pipelines: sequential(n) | shuffle(seed) | repeat() | shard(rank, world) |
// batch(size) | skip(k), Determined's samplers composed at compile time.
//
// Each `|` returns a new type, so iterating costs no virtual call, and no allocation per index or
// per batch (a shuffle's buffer is allocated by its first epoch and reused). The order of stages is
// checked at compile time (order.hpp). A pipeline can report its position as plain data and resume
// from it, regenerating only the current epoch.
#ifndef DTL_SAMPLERS_PIPELINE_HPP
#define DTL_SAMPLERS_PIPELINE_HPP

#include <dtl/detail/abi.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>

#include <dtl/detail/diagnostics.hpp>
#include <dtl/detail/specialization_of.hpp>
#include <dtl/errors.hpp>
#include <dtl/samplers/batch.hpp>
#include <dtl/samplers/node.hpp>
#include <dtl/samplers/order.hpp>
#include <dtl/samplers/repeat.hpp>
#include <dtl/samplers/sampler_state.hpp>
#include <dtl/samplers/shard.hpp>
#include <dtl/samplers/shuffle.hpp>
#include <dtl/samplers/skip.hpp>
#include <dtl/samplers/source.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
struct pipeline_access;
struct rejected_pipeline;
}  // namespace detail

namespace samplers {

/// A composed sampler: an input range of indices (`std::int64_t`) or, after batch(), of batches
/// (`std::span<const std::int64_t>`, valid until the next increment). Built with `|` from
/// sequential(n) or from(range); the type records the stages, so a misordered chain does not compile.
///
/// Iterating follows Python's iterator protocol: each begin() is a new `iter(sampler)`, i.e. a new
/// pass (a new epoch, with a new permutation from the continuing generator, and the skip applied
/// again); with repeat() one pass never ends. begin() is therefore not const, and a pipeline is
/// iterated by one loop at a time.
///
///     auto train = sequential(60000) | shuffle(seed) | batch(32) | repeat() | shard(rank, world) | skip(k);
///     for (std::span<const std::int64_t> b : train) { ... }          // endless
///     auto epoch_len = train.epoch_length();                           // batches per epoch on the chief
template <class Node>
class pipeline {
 public:
  using node_type = Node;
  /// `std::int64_t`, or `std::span<const std::int64_t>` after batch().
  using value_type = typename Node::value_type;
  /// Whether the pipeline yields batches (it contains batch()).
  static constexpr bool is_batched = Node::batched;
  /// Whether iteration never ends (it contains repeat()).
  static constexpr bool is_endless = Node::has_repeat;
  /// Number of shuffle() stages: the size of sampler_state::rngs.
  static constexpr std::size_t shuffle_count = Node::shuffle_count;

  class iterator {
   public:
    using value_type = pipeline::value_type;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = std::input_iterator_tag;

    iterator() = default;
    value_type operator*() const noexcept { return current_; }
    iterator& operator++() {
      done_ = !owner_->node_.next(current_);
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept { return it.done_; }

   private:
    friend class pipeline;
    explicit iterator(pipeline* owner) : owner_(owner) { ++*this; }

    pipeline* owner_ = nullptr;
    value_type current_{};
    bool done_ = true;
  };

  /// Starts a pass (Python's `iter()`), or, right after restore(), continues from the restored
  /// position instead. The iterator holds the first item already.
  iterator begin() {
    if (resumed_) {
      resumed_ = false;
    } else {
      node_.start();
      if constexpr (!is_endless) ++passes_;
    }
    return iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return {}; }

  /// Determined's `len` of the same chain on this rank: repeat() counts one epoch, skip() is
  /// ignored, shard() gives L / world + (L % world > rank), batch() ceil (or floor with drop_last).
  /// For a pipeline without repeat() or skip() it is the exact number of items a pass yields (and
  /// then the pipeline is a std::ranges::sized_range; with either, it deliberately is not).
  [[nodiscard]] std::int64_t size() const { return node_.size(); }

  /// Items per epoch as the chief (rank 0) counts them: size() with every shard() taken at rank 0.
  /// This is the `epoch_len` Determined's trainer computes on the chief and broadcasts, e.g.
  /// len(bs) / world + (len(bs) % world > 0) for sequential(n) | batch(b) | repeat() | shard(r, world),
  /// where len(bs) = ceil(n / b). Use it to convert between batches and epochs on every rank.
  [[nodiscard]] std::int64_t epoch_length() const { return node_.chief_size(); }

  /// Where the pipeline is: just after the item the live iterator points at. Cheap (a copy of
  /// 2.5 KB per shuffle() stage); see sampler_state for the members.
  [[nodiscard]] sampler_state state() const {
    sampler_state state;
    state_into(state);
    return state;
  }

  /// state() into an existing object, reusing its storage: no allocation once `state.rngs` has
  /// held this pipeline's generators (what a loader that records a state per batch needs).
  void state_into(sampler_state& state) const {
    state.position = node_.position();
    if constexpr (is_endless) {
      const detail::epoch_point at = node_.epoch_info();
      state.epoch = std::max<std::int64_t>(at.epoch, 0);
      state.offset = at.offset;
    } else {
      state.epoch = std::max<std::int64_t>(passes_ - 1, 0);
      state.offset = state.position;
    }
    state.rngs.clear();
    state.rngs.reserve(shuffle_count);
    node_.save_rngs(state.rngs);
  }

  /// Continues from a state() of a pipeline built the same way (the skip() count may differ: the
  /// restored position already includes the skip). The next begin() resumes there instead of
  /// starting a pass. Cost: the current epoch's permutation is regenerated from the saved
  /// generators, plus O(1) arithmetic for the position; no earlier epoch is replayed.
  /// Throws dtl::DataError when the state cannot belong to this pipeline; the pipeline must then be
  /// restored again or rebuilt.
  void restore(const sampler_state& state) {
    if (state.rngs.size() != shuffle_count) {
      throw DataError("dtl: this sampler state holds " + std::to_string(state.rngs.size()) +
                      " shuffle generators but the pipeline has " + std::to_string(shuffle_count) +
                      " shuffle() stages. Restore a state into a pipeline built like the one that saved it.");
    }
    if (state.epoch < 0 || state.offset < 0 || state.position < 0) {
      detail::throw_state_mismatch("it has a negative epoch, offset or position");
    }
    if constexpr (!is_endless) {
      if (state.offset != state.position) {
        detail::throw_state_mismatch("without repeat() its offset must equal its position");
      }
    }
    const mt19937_state* cursor = state.rngs.data();
    node_.load_rngs(cursor);
    node_.resume(state.position, state);
    if constexpr (!is_endless) passes_ = state.epoch + 1;
    resumed_ = true;
  }

 private:
  friend struct detail::pipeline_access;
  explicit pipeline(Node node) : node_(std::move(node)) {}

  Node node_;
  std::int64_t passes_ = 0;  // begin() calls that started a pass; the epoch without repeat()
  bool resumed_ = false;     // restore() positioned the pipeline; the next begin() must not restart
};

}  // namespace samplers

namespace detail {

/// A stage (`skip_stage`, ...) names the node it becomes (`Stage::node<U>`), so `|` knows a new
/// stage from its own header alone.
template <class T>
inline constexpr bool is_stage = requires { typename T::template node<sequential_node>; };

struct pipeline_access {
  template <class Node>
  static samplers::pipeline<Node> make(Node node) {
    return samplers::pipeline<Node>(std::move(node));
  }
  // Copies the stages out of an lvalue pipeline (which stays usable) or moves them out of an rvalue.
  template <class P>
  static auto take(P&& p) {
    return std::forward<P>(p).node_;
  }
};

template <class N, class Stage>
auto attach(N node, const Stage& stage) {
  return pipeline_access::make(typename Stage::template node<N>(std::move(node), stage));
}

/// What a misordered `|` evaluates to after its static_assert: a do-nothing stand-in with the
/// pipeline's members, so the code after the mistake compiles and the grammar's message is the
/// only error the compiler prints.
struct rejected_pipeline {
  using value_type = std::int64_t;
  static constexpr bool is_batched = false;
  static constexpr bool is_endless = false;
  static constexpr std::size_t shuffle_count = 0;
  const std::int64_t* begin() const noexcept { return nullptr; }
  const std::int64_t* end() const noexcept { return nullptr; }
  std::int64_t size() const noexcept { return 0; }
  std::int64_t epoch_length() const noexcept { return 0; }
  samplers::sampler_state state() const { return {}; }
  void state_into(samplers::sampler_state& /*state*/) const noexcept {}
  void restore(const samplers::sampler_state& /*state*/) noexcept {}
};

}  // namespace detail

namespace samplers {

/// The indices 0 .. n-1 in order: torch's SequentialSampler over a dataset of n records, and the
/// usual start of a pipeline. Throws dtl::DataError for n < 0.
///
///     for (std::int64_t i : sequential(3)) { ... }   // 0 1 2
inline pipeline<detail::sequential_node> sequential(std::int64_t n) {
  if (n < 0) throw DataError("dtl: sequential(n) needs n >= 0, got " + std::to_string(n));
  return detail::pipeline_access::make(detail::sequential_node(n));
}

/// A pipeline starting from the user's own indices (a custom torch Sampler), in the range's
/// order: any sized, re-iterable range of integers. An lvalue range is viewed (it must outlive the
/// pipeline), an rvalue one is moved in. `my_indices | shuffle(s)` is the same as
/// `from(my_indices) | shuffle(s)`.
///
///     std::vector<std::int64_t> picked{4, 8, 15, 16, 23, 42};
///     auto p = from(picked) | shuffle(1) | batch(2);
template <class R>
auto from(R&& range) {
  if constexpr (detail::IndexRange<R>) {
    using view = std::views::all_t<R>;
    return detail::pipeline_access::make(detail::range_node<view>(std::views::all(std::forward<R>(range))));
  } else {
    static_assert(detail::always_false<R>, DTL_DIAG_SAMPLER_FROM_NOT_INDICES);
    return detail::rejected_pipeline{};
  }
}

/// Appends a stage, returning a new pipeline type (an lvalue pipeline is copied, an rvalue moved).
/// Misordered stages fail to compile with a message naming the rule (order.hpp); a left side that
/// is neither a pipeline nor a range of indices fails too.
///
///     auto validation = sequential(n) | batch(b) | shard(rank, world);
///     auto training = sequential(n) | shuffle(seed) | batch(b) | repeat() | shard(rank, world) | skip(k);
///     // sequential(n) | repeat() | shuffle(seed)   -> error: "dtl: shuffle() after repeat() never ends ..."
template <class Left, class Stage>
requires detail::is_stage<std::remove_cvref_t<Stage>>
auto operator|(Left&& left, Stage&& stage) {
  using L = std::remove_cvref_t<Left>;
  using S = std::remove_cvref_t<Stage>;
  if constexpr (std::is_same_v<L, detail::rejected_pipeline>) {
    return detail::rejected_pipeline{};  // already reported
  } else if constexpr (detail::specialization_of<L, samplers::pipeline>) {
    if constexpr (detail::check_order<typename L::node_type, S>()) {
      return detail::attach(detail::pipeline_access::take(std::forward<Left>(left)), static_cast<const S&>(stage));
    } else {
      return detail::rejected_pipeline{};
    }
  } else if constexpr (detail::IndexRange<Left>) {
    return from(std::forward<Left>(left)) | std::forward<Stage>(stage);
  } else {
    static_assert(detail::always_false<L>, DTL_DIAG_SAMPLER_NO_SOURCE);
    return detail::rejected_pipeline{};
  }
}

}  // namespace samplers
}  // namespace DTL_ABI
}  // namespace dtl

// repeat() makes a pipeline endless and skip() makes it shorter than its Determined len, so
// neither may claim std::ranges::size(): std::views::take would trust it and stop early or overrun.
namespace std::ranges {
template <class Node>
inline constexpr bool disable_sized_range<dtl::samplers::pipeline<Node>> = Node::has_repeat || Node::has_skip;
}  // namespace std::ranges

#endif  // DTL_SAMPLERS_PIPELINE_HPP
