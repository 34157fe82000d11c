// dtl — the stages a sampler pipeline starts from: sequential(n) and from(range).
// The user-facing functions live in pipeline.hpp, since they return pipelines.
#ifndef DTL_SAMPLERS_SOURCE_HPP
#define DTL_SAMPLERS_SOURCE_HPP

#include <dtl/detail/abi.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <ranges>
#include <utility>
#include <vector>

#include <dtl/samplers/node.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// 0, 1, ..., n-1: torch's SequentialSampler over a dataset of n records.
class sequential_node : public source_base<sequential_node> {
 public:
  explicit sequential_node(std::int64_t n) noexcept : n_(n) {}

  [[nodiscard]] std::int64_t size() const noexcept { return n_; }
  [[nodiscard]] std::int64_t position() const noexcept { return next_; }

  void start() noexcept { next_ = 0; }
  bool next(std::int64_t& out) noexcept {
    if (next_ >= n_) return false;
    out = next_++;
    return true;
  }
  std::int64_t next_n(std::int64_t* out, std::int64_t k) noexcept {
    const std::int64_t m = std::min(k, n_ - next_);
    std::iota(out, out + m, next_);
    next_ += m;
    return m;
  }
  std::int64_t advance(std::int64_t k) noexcept {
    const std::int64_t m = std::min(k, n_ - next_);
    next_ += m;
    return m;
  }

 private:
  std::int64_t n_;
  std::int64_t next_ = 0;
};

/// The indices a user's range holds, in its order (a custom torch Sampler). The range is viewed
/// (lvalue) or owned (rvalue) through std::views::all, and must be re-iterable and sized because
/// every epoch iterates it again and shuffle() and len need its size.
template <std::ranges::view V>
class range_node : public source_base<range_node<V>> {
 public:
  explicit range_node(V base) : base_(std::move(base)), it_(std::ranges::begin(base_)) {}

  // The iterator points into base_, so a copy must re-derive it from its own base_. An owned
  // (moved-in) range is move-only, like std::ranges::owning_view.
  range_node(const range_node& other)
    requires std::copy_constructible<V>
      : base_(other.base_), it_(other.iterator_at(base_)), pos_(other.pos_) {}
  range_node(range_node&& other) noexcept(std::is_nothrow_move_constructible_v<V>)
      : base_(std::move(other.base_)), it_(other.iterator_at(base_)), pos_(other.pos_) {}
  range_node& operator=(const range_node& other)
    requires std::copy_constructible<V>
  {
    if (this != &other) {
      base_ = other.base_;
      pos_ = other.pos_;
      it_ = std::ranges::next(std::ranges::begin(base_), pos_);
    }
    return *this;
  }
  range_node& operator=(range_node&& other) noexcept(std::is_nothrow_move_assignable_v<V>) {
    if (this != &other) {
      base_ = std::move(other.base_);
      pos_ = other.pos_;
      it_ = std::ranges::next(std::ranges::begin(base_), pos_);
    }
    return *this;
  }
  ~range_node() = default;

  [[nodiscard]] std::int64_t size() const { return static_cast<std::int64_t>(std::ranges::size(base_)); }
  [[nodiscard]] std::int64_t position() const noexcept { return pos_; }

  void start() {
    it_ = std::ranges::begin(base_);
    pos_ = 0;
  }
  bool next(std::int64_t& out) {
    if (it_ == std::ranges::end(base_)) return false;
    out = static_cast<std::int64_t>(*it_);
    ++it_;
    ++pos_;
    return true;
  }
  std::int64_t next_n(std::int64_t* out, std::int64_t k) {
    std::int64_t m = 0;
    for (; m < k && it_ != std::ranges::end(base_); ++m, ++it_) out[m] = static_cast<std::int64_t>(*it_);
    pos_ += m;
    return m;
  }
  std::int64_t advance(std::int64_t k) {
    const auto left = std::ranges::advance(it_, static_cast<std::ranges::range_difference_t<V>>(k),
                                           std::ranges::end(base_));
    const auto m = k - static_cast<std::int64_t>(left);
    pos_ += m;
    return m;
  }

 private:
  std::ranges::iterator_t<V> iterator_at(V& base) const {
    return std::ranges::next(std::ranges::begin(base), pos_);
  }

  V base_;
  std::ranges::iterator_t<V> it_;
  std::int64_t pos_ = 0;
};

/// What from(range) accepts: a sized, re-iterable range of integer indices.
template <class R>
concept IndexRange = std::ranges::forward_range<R> && std::ranges::sized_range<R> &&
                     std::ranges::viewable_range<R> && std::integral<std::ranges::range_value_t<R>>;

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_SOURCE_HPP
