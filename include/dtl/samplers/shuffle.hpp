// dtl — shuffle(seed): Determined's ReproducibleShuffleSampler / ReproducibleShuffleBatchSampler.
#ifndef DTL_SAMPLERS_SHUFFLE_HPP
#define DTL_SAMPLERS_SHUFFLE_HPP

#include <dtl/detail/abi.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <dtl/samplers/node.hpp>
#include <dtl/samplers/numpy_random.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
template <SamplerNode U>
class shuffle_node;
}  // namespace detail

namespace samplers {

/// The shuffle() stage as written in a pipeline; see shuffle().
struct shuffle_stage {
  std::uint32_t seed = 0;
  bool enabled = true;
  /// The node this stage becomes in a pipeline.
  template <class U>
  using node = detail::shuffle_node<U>;
};

/// Reproducible shuffle, identical to Determined's ReproducibleShuffleSampler (before batch()) or
/// ReproducibleShuffleBatchSampler (after batch(), shuffling whole batches): one numpy
/// `RandomState(seed)` for the pipeline's lifetime; each epoch reads the whole stage below and
/// shuffles it with the continuing generator, so every epoch has a new, reproducible order.
/// `enabled = false` makes it the identity without changing the pipeline's type, so a DataLoader can
/// choose at run time. Throws dtl::DataError for a seed outside [0, 2^32).
///
///     auto p = sequential(5) | shuffle(777);   // epoch 1: 0 4 1 2 3, epoch 2: 2 0 1 3 4
inline shuffle_stage shuffle(std::int64_t seed, bool enabled = true) {
  return {detail::checked_numpy_seed(seed), enabled};  // checked where the user wrote it
}

}  // namespace samplers

namespace detail {

template <SamplerNode U>
class shuffle_node : public stage_base<U, U::traits.with_shuffle()> {
  using shuffle_node::stage_base::inner_;

 public:
  shuffle_node(U inner, samplers::shuffle_stage stage)
      : shuffle_node::stage_base(std::move(inner)),
        rng_(stage.seed),
        epoch_start_(rng_.state()),
        enabled_(stage.enabled) {}

  [[nodiscard]] std::int64_t position() const { return enabled_ ? pos_ : inner_.position(); }

  // Materialising a whole epoch is Determined's algorithm (`list(sampler)` then shuffle); the
  // buffers keep their capacity, so only the first epoch allocates.
  void start() {
    inner_.start();
    epoch_start_ = rng_.state();
    if (!enabled_) return;
    if constexpr (U::batched) {
      flat_.clear();
      batches_.clear();
      index_batch b;
      while (inner_.next(b)) {
        batches_.push_back({static_cast<std::int64_t>(flat_.size()), static_cast<std::int64_t>(b.size())});
        flat_.insert(flat_.end(), b.begin(), b.end());
      }
      rng_.shuffle(std::span(batches_));
    } else {
      const std::int64_t expected = inner_.size();
      items_.resize(static_cast<std::size_t>(expected));
      items_.resize(static_cast<std::size_t>(inner_.next_n(items_.data(), expected)));
      std::int64_t extra = 0;
      while (inner_.next(extra)) items_.push_back(extra);  // a source longer than its size()
      rng_.shuffle(std::span(items_));
    }
    pos_ = 0;
  }

  bool next(typename U::value_type& out) {
    if (!enabled_) return inner_.next(out);
    if (pos_ >= count()) return false;
    const auto at = static_cast<std::size_t>(pos_++);
    if constexpr (U::batched) {
      out = index_batch(flat_.data() + batches_[at].first, static_cast<std::size_t>(batches_[at].second));
    } else {
      out = items_[at];
    }
    return true;
  }

  std::int64_t next_n(std::int64_t* out, std::int64_t k)
    requires(!U::batched)
  {
    if (!enabled_) return inner_.next_n(out, k);
    const std::int64_t m = std::min(k, count() - pos_);
    std::copy_n(items_.data() + pos_, m, out);
    pos_ += m;
    return m;
  }

  std::int64_t advance(std::int64_t k) {
    if (!enabled_) return inner_.advance(k);
    const std::int64_t m = std::min(k, count() - pos_);
    pos_ += m;
    return m;
  }

  // One epoch's draws without the permutation: what lets skip(k) jump whole epochs.
  void skip_pass() {
    inner_.skip_pass();
    if (enabled_) rng_.discard_shuffle(static_cast<std::uint64_t>(inner_.size()));
  }

  // Nothing under a shuffle repeats (the grammar forbids it), so a position is reached by
  // regenerating the epoch from the restored generator and dropping p items.
  void resume(std::int64_t p, const samplers::sampler_state& /*state*/) {
    replay_to(*this, p, "its position is past the end of the data");
  }

  void save_rngs(std::vector<samplers::mt19937_state>& saved) const {
    inner_.save_rngs(saved);
    saved.push_back(epoch_start_);
  }
  void load_rngs(const samplers::mt19937_state*& cursor) {
    inner_.load_rngs(cursor);
    rng_.set_state(*cursor);
    epoch_start_ = *cursor;
    ++cursor;
  }

 private:
  [[nodiscard]] std::int64_t count() const noexcept {
    if constexpr (U::batched) {
      return static_cast<std::int64_t>(batches_.size());
    } else {
      return static_cast<std::int64_t>(items_.size());
    }
  }

  samplers::numpy_random_state rng_;
  samplers::mt19937_state epoch_start_;  // generator at the start of the current epoch, for state()
  bool enabled_;
  std::int64_t pos_ = 0;
  std::vector<std::int64_t> items_;                               // index level: the epoch's permutation
  std::vector<std::int64_t> flat_;                                // batch level: the epoch's batches, in
  std::vector<std::pair<std::int64_t, std::int64_t>> batches_;    // read order, and their (offset, size)
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_SHUFFLE_HPP
