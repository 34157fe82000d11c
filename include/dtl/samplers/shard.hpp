// dtl — shard(rank, world): Determined's DistributedSampler / DistributedBatchSampler.
#ifndef DTL_SAMPLERS_SHARD_HPP
#define DTL_SAMPLERS_SHARD_HPP

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
class shard_node;
}  // namespace detail

namespace samplers {

/// The shard() stage as written in a pipeline; see shard().
struct shard_stage {
  std::int64_t rank = 0;
  std::int64_t world = 1;
  /// The node this stage becomes in a pipeline.
  template <class U>
  using node = detail::shard_node<U>;
};

/// This rank's share: the i-th item goes to rank i % world, with no padding, dropping or shuffling
/// (Determined's DistributedSampler; after batch(), DistributedBatchSampler, which deals out whole
/// batches). len = L / world + (L % world > rank). Throws dtl::DataError unless
/// 0 <= rank < world (Determined checks this only for the batch variant; dtl always does).
///
///     auto p = sequential(10) | shard(0, 3);   // 0 3 6 9
inline shard_stage shard(std::int64_t rank, std::int64_t world) {
  if (world < 1) throw DataError("dtl: shard(rank, world) needs world >= 1, got " + std::to_string(world));
  if (rank < 0 || rank >= world) {
    throw DataError("dtl: shard(rank, world) needs 0 <= rank < world, got rank " + std::to_string(rank) +
                    " of world " + std::to_string(world));
  }
  return {rank, world};
}

}  // namespace samplers

namespace detail {

template <SamplerNode U>
class shard_node : public stage_base<U, U::traits.with_shard()> {
  using shard_node::stage_base::inner_;

 public:
  shard_node(U inner, samplers::shard_stage stage)
      : shard_node::stage_base(std::move(inner)), rank_(stage.rank), world_(stage.world) {}

  [[nodiscard]] std::int64_t size() const { return share(inner_.size(), rank_); }
  [[nodiscard]] std::int64_t chief_size() const { return share(inner_.chief_size(), 0); }
  [[nodiscard]] std::int64_t position() const noexcept { return mine_before(read_); }

  void start() {
    inner_.start();
    read_ = 0;
  }

  bool next(typename U::value_type& out) {
    const std::int64_t gap = gap_to_mine();
    if (gap != 0) {
      const std::int64_t dropped = inner_.advance(gap);
      read_ += dropped;
      if (dropped != gap) return false;
    }
    if (!inner_.next(out)) return false;
    ++read_;
    return true;
  }

  std::int64_t next_n(std::int64_t* out, std::int64_t k)
    requires(!U::batched)
  {
    if (world_ == 1) {
      const std::int64_t got = inner_.next_n(out, k);
      read_ += got;
      return got;
    }
    std::int64_t m = 0;
    while (m < k && next(out[m])) ++m;
    return m;
  }

  // Stops just after this rank's k-th item, the same place reading them would leave it.
  std::int64_t advance(std::int64_t k) {
    if (k <= 0) return 0;
    const std::int64_t before = position();
    const std::int64_t last_mine = saturating_add(read_ + gap_to_mine(), saturating_mul(k - 1, world_));
    const std::int64_t want = saturating_add(last_mine, 1) - read_;
    read_ += inner_.advance(want);
    return position() - before;
  }

  // Above a repeat() the stream is endless: this rank's p-th item is item (p-1)*world + rank.
  void resume(std::int64_t p, const samplers::sampler_state& state) {
    if constexpr (U::has_repeat) {
      read_ = p == 0 ? 0 : saturating_add(saturating_mul(p - 1, world_), rank_ + 1);
      inner_.resume(read_, state);
    } else {
      replay_to(*this, p, "its position is past the end of this rank's shard");
    }
  }

 private:
  [[nodiscard]] std::int64_t share(std::int64_t items, std::int64_t rank) const noexcept {
    return items / world_ + (items % world_ > rank ? 1 : 0);
  }
  // Items the stage below must drop before this rank's next one.
  [[nodiscard]] std::int64_t gap_to_mine() const noexcept {
    const std::int64_t gap = rank_ - read_ % world_;
    return gap < 0 ? gap + world_ : gap;
  }
  // This rank's items among the first `read` items below.
  [[nodiscard]] std::int64_t mine_before(std::int64_t read) const noexcept {
    return read > rank_ ? (read - rank_ - 1) / world_ + 1 : 0;
  }

  std::int64_t rank_;
  std::int64_t world_;
  std::int64_t read_ = 0;  // items of the stage below consumed this pass, this rank's or not
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_SHARD_HPP
