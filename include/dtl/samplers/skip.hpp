// dtl — skip(k): Determined's SkipSampler / SkipBatchSampler.
#ifndef DTL_SAMPLERS_SKIP_HPP
#define DTL_SAMPLERS_SKIP_HPP

#include <dtl/detail/abi.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <dtl/samplers/node.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
template <SamplerNode U>
class skip_node;
}  // namespace detail

namespace samplers {

/// The skip() stage as written in a pipeline; see skip().
struct skip_stage {
  std::int64_t count = 0;
  /// The node this stage becomes in a pipeline.
  template <class U>
  using node = detail::skip_node<U>;
};

/// Drops the first k items of each pass (after batch(), k batches: Determined's SkipBatchSampler,
/// with k = batches already trained). Like Determined, size() ignores the skip. Unlike Determined,
/// the skip does not read the dropped items: whole epochs of a repeat() are jumped over (their
/// shuffles' random draws made, nothing materialised), then the rest inside one epoch.
/// Throws dtl::DataError for k < 0.
///
///     auto p = sequential(7) | batch(3) | repeat() | skip(2);   // [6] [0 1 2] [3 4 5] [6] ...
inline skip_stage skip(std::int64_t k) {
  if (k < 0) throw DataError("dtl: skip(k) needs k >= 0, got " + std::to_string(k));
  return {k};
}

}  // namespace samplers

namespace detail {

template <SamplerNode U>
class skip_node : public stage_base<U, U::traits.with_skip()> {
  using skip_node::stage_base::inner_;

 public:
  skip_node(U inner, samplers::skip_stage stage) : skip_node::stage_base(std::move(inner)), count_(stage.count) {}

  [[nodiscard]] std::int64_t position() const noexcept { return pos_; }

  void start() {
    inner_.start();
    pos_ = inner_.advance(count_);
  }
  bool next(typename U::value_type& out) {
    if (!inner_.next(out)) return false;
    ++pos_;
    return true;
  }
  std::int64_t next_n(std::int64_t* out, std::int64_t k)
    requires(!U::batched)
  {
    const std::int64_t got = inner_.next_n(out, k);
    pos_ += got;
    return got;
  }
  std::int64_t advance(std::int64_t k) {
    const std::int64_t got = inner_.advance(k);
    pos_ += got;
    return got;
  }

  // A restored position already counts the skipped items, so the skip is not applied again.
  void resume(std::int64_t p, const samplers::sampler_state& state) {
    inner_.resume(p, state);
    pos_ = p;
  }

 private:
  std::int64_t count_;
  std::int64_t pos_ = 0;  // items of the pass produced or skipped
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_SKIP_HPP
