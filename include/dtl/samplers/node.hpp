// dtl — the protocol every sampler stage implements internally. Users never name these; they
// compose stages with `|` (see pipeline.hpp).
#ifndef DTL_SAMPLERS_NODE_HPP
#define DTL_SAMPLERS_NODE_HPP

#include <dtl/detail/abi.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <dtl/errors.hpp>
#include <dtl/samplers/numpy_random.hpp>
#include <dtl/samplers/sampler_state.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// A batch as a pipeline yields it: a view into a buffer the pipeline owns and reuses, valid until
/// the iterator is incremented.
using index_batch = std::span<const std::int64_t>;

/// The facts about a stage (and the stages below it) that the order grammar and the pipeline read
/// at compile time, by name. A source has none of them (`stage_traits{}`); every other stage
/// starts from the traits of the stage it wraps and adds its own with one `with_...()` call.
struct stage_traits {
  bool batched = false;           ///< yields index_batch rather than std::int64_t
  bool has_repeat = false;        ///< a repeat() at or below this stage
  bool has_shard = false;         ///< a shard() at or below this stage
  bool has_batch = false;         ///< a batch() at or below this stage
  bool has_skip = false;          ///< a skip() at or below this stage
  std::size_t shuffle_count = 0;  ///< shuffle() stages at or below this stage

  [[nodiscard]] constexpr stage_traits with_shuffle() const noexcept {
    auto t = *this;
    ++t.shuffle_count;
    return t;
  }
  [[nodiscard]] constexpr stage_traits with_repeat() const noexcept { return with(&stage_traits::has_repeat); }
  [[nodiscard]] constexpr stage_traits with_shard() const noexcept { return with(&stage_traits::has_shard); }
  /// batch() is also what turns single indices into batches.
  [[nodiscard]] constexpr stage_traits with_batch() const noexcept {
    auto t = with(&stage_traits::has_batch);
    t.batched = true;
    return t;
  }
  [[nodiscard]] constexpr stage_traits with_skip() const noexcept { return with(&stage_traits::has_skip); }
  /// A copy with one more `has_...` flag set.
  [[nodiscard]] constexpr stage_traits with(bool stage_traits::*flag) const noexcept {
    auto t = *this;
    t.*flag = true;
    return t;
  }

  friend constexpr bool operator==(const stage_traits&, const stage_traits&) = default;
};

/// Each node derives from the instance describing it, which spells its traits out as static
/// members (`N::batched`, `N::has_repeat`, ...; `N::traits` for the next stage to build on).
///   class batch_node : public node_flags<U::traits.with_batch()> { ... };
template <stage_traits Traits>
struct node_flags {
  static constexpr stage_traits traits = Traits;
  static constexpr bool batched = Traits.batched;
  static constexpr bool has_repeat = Traits.has_repeat;
  static constexpr bool has_shard = Traits.has_shard;
  static constexpr bool has_batch = Traits.has_batch;
  static constexpr bool has_skip = Traits.has_skip;
  static constexpr std::size_t shuffle_count = Traits.shuffle_count;
  using value_type = std::conditional_t<Traits.batched, index_batch, std::int64_t>;
};

/// The repeat() stage's epoch counter and how far its epoch stage has read; {-1, 0} below it.
struct epoch_point {
  std::int64_t epoch = -1;
  std::int64_t offset = 0;
};

/// The node protocol, a pull model that mirrors Python's iterator protocol plus the cheap jumps
/// resuming needs. Every member is a direct (inlinable) call on the stage below: no virtual calls.
///   start()           begin a pass, like Python's `iter(sampler)` (draws a new permutation).
///   next(out)         the next item of the pass, false at its end.
///   advance(k)        drop up to k items of the pass as cheaply as the stage can; returns how many.
///   position()        items of the current pass produced or dropped so far.
///   size()            Determined's `len`; chief_size() the same with every shard at rank 0.
///   resume(p, state)  put the pass at position p of the pass described by `state` (see restore).
///   save_rngs / load_rngs   the shuffle() generators, innermost first.
///   epoch_info()      the repeat() stage's epoch and offset (see sampler_state).
/// Index-level nodes also have next_n(out, k), which fills a batch with one call per stage.
/// Nodes that can sit under repeat() have skip_pass(): consume one pass's random draws only.
template <class N>
concept SamplerNode =
    std::move_constructible<N> &&
    requires(N& node, const N& cnode, typename N::value_type& out, std::int64_t k,
             const samplers::sampler_state& state, std::vector<samplers::mt19937_state>& saved,
             const samplers::mt19937_state*& cursor) {
      { N::batched } -> std::convertible_to<bool>;
      { N::shuffle_count } -> std::convertible_to<std::size_t>;
      node.start();
      { node.next(out) } -> std::same_as<bool>;
      { node.advance(k) } -> std::same_as<std::int64_t>;
      { cnode.position() } -> std::same_as<std::int64_t>;
      { cnode.size() } -> std::same_as<std::int64_t>;
      { cnode.chief_size() } -> std::same_as<std::int64_t>;
      node.resume(k, state);
      cnode.save_rngs(saved);
      node.load_rngs(cursor);
      { cnode.epoch_info() } -> std::same_as<epoch_point>;
    };

/// A node yielding single indices, which batch() fills its buffer from.
template <class N>
concept IndexNode = SamplerNode<N> && !N::batched && requires(N& node, std::int64_t* out, std::int64_t k) {
  { node.next_n(out, k) } -> std::same_as<std::int64_t>;
};

[[noreturn]] inline void throw_state_mismatch(const char* detail) {
  throw DataError(std::string("dtl: this sampler state does not fit this pipeline (") + detail +
                  "). Restore a state into a pipeline built like the one that saved it: same dataset "
                  "size, stages, batch size and world size.");
}

/// Where nothing below repeats, a position is reached by starting a fresh pass and dropping `p`
/// items; `past_what` says which end a too-large position ran past.
template <class Node>
void replay_to(Node& node, std::int64_t p, const char* past_what) {
  node.start();
  if (node.advance(p) != p) throw_state_mismatch(past_what);
}

/// What a stage passes through to the stage it wraps unless it says otherwise (the idea of
/// range-v3's adaptor_base): a stage derives from stage_base<the stage below, its traits> and
/// states only what differs; a member it declares hides the base's. No virtual calls. A node names
/// the base's members through itself (`using skip_node::stage_base::inner_;`, `skip_node::stage_base(...)`
/// in its constructor) and its item type as `typename U::value_type`, which node_flags also gives
/// its users.
template <SamplerNode U, stage_traits Traits>
class stage_base : public node_flags<Traits> {
 public:
  explicit stage_base(U inner) : inner_(std::move(inner)) {}
  [[nodiscard]] std::int64_t size() const { return inner_.size(); }
  [[nodiscard]] std::int64_t chief_size() const { return inner_.chief_size(); }
  void skip_pass() { inner_.skip_pass(); }
  void save_rngs(std::vector<samplers::mt19937_state>& saved) const { inner_.save_rngs(saved); }
  void load_rngs(const samplers::mt19937_state*& cursor) { inner_.load_rngs(cursor); }
  [[nodiscard]] epoch_point epoch_info() const { return inner_.epoch_info(); }

 protected:
  U inner_;
};

/// What the sources (the bottom of every pipeline) share: no generator, no epoch, a resume that
/// replays the pass to its position, and the chief seeing the whole source.
template <class Derived>
class source_base : public node_flags<stage_traits{}> {
 public:
  [[nodiscard]] std::int64_t chief_size() const { return static_cast<const Derived&>(*this).size(); }
  void skip_pass() noexcept {}
  void resume(std::int64_t p, const samplers::sampler_state& /*state*/) {
    replay_to(static_cast<Derived&>(*this), p, "its position is past the end of the data");
  }
  void save_rngs(std::vector<samplers::mt19937_state>& /*saved*/) const {}
  void load_rngs(const samplers::mt19937_state*& /*cursor*/) noexcept {}
  [[nodiscard]] epoch_point epoch_info() const noexcept { return {}; }
};

/// a * b for a, b >= 0, saturating: a skip of 10^18 batches must not wrap into a small one.
constexpr std::int64_t saturating_mul(std::int64_t a, std::int64_t b) noexcept {
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  if (a != 0 && b > max / a) return max;
  return a * b;
}

/// a + b for a, b >= 0, saturating.
constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  return a > max - b ? max : a + b;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_NODE_HPP
