// dtl — batch(size, drop_last): torch's BatchSampler.
#ifndef DTL_SAMPLERS_BATCH_HPP
#define DTL_SAMPLERS_BATCH_HPP

#include <dtl/detail/abi.hpp>

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <dtl/samplers/node.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
template <IndexNode U>
class batch_node;
}  // namespace detail

namespace samplers {

/// The batch() stage as written in a pipeline; see batch().
struct batch_stage {
  std::int64_t size = 1;
  bool drop_last = false;
  /// The node this stage becomes in a pipeline.
  template <class U>
  using node = detail::batch_node<U>;
};

/// Groups indices into batches of `size`, the last one shorter unless `drop_last` drops it
/// (torch's BatchSampler; len = ceil(L / size), or floor with drop_last). Stages after it work on
/// whole batches, like Determined's *BatchSampler classes. A batch is a
/// `std::span<const std::int64_t>` into a buffer the pipeline reuses: copy it if you keep it past
/// the next increment. Throws dtl::DataError for size < 1.
///
///     auto p = sequential(5) | batch(2);   // [0 1] [2 3] [4]
inline batch_stage batch(std::int64_t size, bool drop_last = false) {
  if (size < 1) throw DataError("dtl: batch(size) needs size >= 1, got " + std::to_string(size));
  return {size, drop_last};
}

}  // namespace samplers

namespace detail {

template <IndexNode U>
class batch_node : public stage_base<U, U::traits.with_batch()> {
  using batch_node::stage_base::inner_;

 public:
  batch_node(U inner, samplers::batch_stage stage)
      : batch_node::stage_base(std::move(inner)), size_(stage.size), drop_last_(stage.drop_last), buffer_(allocate()) {}

  [[nodiscard]] std::int64_t size() const { return batches_in(inner_.size()); }
  [[nodiscard]] std::int64_t chief_size() const { return batches_in(inner_.chief_size()); }
  [[nodiscard]] std::int64_t position() const noexcept { return pos_; }

  void start() {
    inner_.start();
    pos_ = 0;
  }

  bool next(index_batch& out) {
    const std::int64_t got = inner_.next_n(buffer_.data(), static_cast<std::int64_t>(buffer_.size()));
    if (got == 0 || (got < size_ && drop_last_)) return false;
    out = index_batch(buffer_.data(), static_cast<std::size_t>(got));
    ++pos_;
    return true;
  }

  std::int64_t advance(std::int64_t k) {
    const std::int64_t items = inner_.advance(saturating_mul(k, size_));
    const std::int64_t m = items / size_ + (items % size_ != 0 && !drop_last_ ? 1 : 0);
    pos_ += m;
    return m;
  }

  // Above a repeat() the stream is endless, so batch p starts at item p * size exactly.
  void resume(std::int64_t p, const samplers::sampler_state& state) {
    if constexpr (U::has_repeat) {
      inner_.resume(saturating_mul(p, size_), state);
      pos_ = p;
    } else {
      replay_to(*this, p, "its position is past the end of the data");
    }
  }

 private:
  /// The buffer a batch needs: `size` indices, or no more than one pass of the stages below
  /// holds (a batch larger than the data is its one short batch, as in torch), so a global batch
  /// size far beyond the data allocates nothing extra. Above a repeat() a batch does take `size`
  /// indices; one that cannot be allocated is a DataError naming the size.
  [[nodiscard]] std::vector<std::int64_t> allocate() const {
    std::int64_t n = size_;
    if constexpr (!U::has_repeat) n = std::min(n, std::max<std::int64_t>(inner_.size(), 1));
    try {
      if (static_cast<std::uint64_t>(n) > std::vector<std::int64_t>().max_size()) throw std::bad_alloc();
      return std::vector<std::int64_t>(static_cast<std::size_t>(n));
    } catch (const std::bad_alloc&) {
      throw DataError("dtl: batch(size = " + std::to_string(size_) +
                      "): a batch of that many indices does not fit in memory; check the batch size "
                      "(global_batch_size, divided by the number of ranks)");
    }
  }

  [[nodiscard]] std::int64_t batches_in(std::int64_t items) const noexcept {
    return items / size_ + (items % size_ != 0 && !drop_last_ ? 1 : 0);
  }

  std::int64_t size_;
  bool drop_last_;
  std::vector<std::int64_t> buffer_;  // the batch handed out; reused, so batches never allocate
  std::int64_t pos_ = 0;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_BATCH_HPP
