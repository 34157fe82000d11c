// dtl — loaders dtl cannot adapt: any input range of batches, allowed only when a trial opts out
// of the dataset reproducibility checks (Determined's
// `context.experimental.disable_dataset_reproducibility_checks()`). The Trainer then iterates the
// range as it is: training restarts it whenever it ends, validation makes one pass, and nothing is
// sharded or skipped — so a resumed run starts the data from the beginning, and every rank sees
// every batch.
#ifndef DTL_DATA_RAW_LOADER_HPP
#define DTL_DATA_RAW_LOADER_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/data/data_loader.hpp>
#include <dtl/errors.hpp>
#include <dtl/samplers/sampler_state.hpp>

#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {

/// What the Trainer needs from a loader to repeat, shard and skip it reproducibly: dtl::DataLoader.
/// (adapt_evaluation is used only on validation loaders; checking it here would instantiate it for
/// a training loader whose endless batch sampler cannot validate.)
template <class L>
concept AdaptableLoader = requires(const L& l, const AdaptOptions& a, std::int64_t world) {
  typename L::batch_type;
  { l.epoch_length(world) } -> std::convertible_to<std::int64_t>;
  l.adapt_training(a);
  { l.describe(a) } -> std::convertible_to<std::string>;
};

/// Any other loader: a range of batches (iterated as is, only with the checks disabled).
template <class L>
concept RawLoader = !AdaptableLoader<L> && std::ranges::input_range<L>;

namespace detail {

template <class L>
struct loader_batch_of {
  using type = std::ranges::range_value_t<L>;
};
template <AdaptableLoader L>
struct loader_batch_of<L> {
  using type = typename L::batch_type;
};

/// A raw loader for training: passes over the range again and again, like repeat().
template <class L>
class RepeatingStream {
 public:
  using batch_type = std::ranges::range_value_t<L>;
  explicit RepeatingStream(L& loader) : loader_(&loader) {}

  using iterator = stream_iterator<RepeatingStream, batch_type>;

  iterator begin() {
    restart();
    return iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return {}; }
  /// A raw range's position cannot be saved.
  [[nodiscard]] std::optional<samplers::sampler_state> state() const { return std::nullopt; }

 private:
  friend iterator;
  static constexpr bool at_end() noexcept { return false; }  // repeats for ever
  void restart() {
    it_.emplace(std::ranges::begin(*loader_));
    if (*it_ == std::ranges::end(*loader_))
      throw DataError("dtl: the training data loader yields no batch: give it at least one batch");
  }
  batch_type& current() {
    if (!current_) current_.emplace(**it_);
    return *current_;
  }
  void advance() {
    current_.reset();
    if (++*it_ == std::ranges::end(*loader_)) restart();
  }

  L* loader_;
  std::optional<std::ranges::iterator_t<L>> it_;
  std::optional<batch_type> current_;
};

template <AdaptableLoader L>
auto adapt_training(const L& loader, const AdaptOptions& a) {
  return loader.adapt_training(a);
}
template <RawLoader L>
auto adapt_training(L& loader, const AdaptOptions& /*a*/) {
  return RepeatingStream<L>(loader);
}

template <AdaptableLoader L>
auto adapt_evaluation(const L& loader, const AdaptOptions& a) {
  return loader.adapt_evaluation(a);
}
template <RawLoader L>
L& adapt_evaluation(L& loader, const AdaptOptions& /*a*/) {
  return loader;
}

/// Batches per epoch as the chief counts them; a raw range without a size has epochs that never
/// end (Determined's `sys.maxsize`).
template <AdaptableLoader L>
std::int64_t epoch_length(const L& loader, std::int64_t world) {
  return loader.epoch_length(world);
}
template <RawLoader L>
std::int64_t epoch_length(L& loader, std::int64_t /*world*/) {
  if constexpr (std::ranges::sized_range<L>)
    return static_cast<std::int64_t>(std::ranges::size(loader));
  else
    return std::numeric_limits<std::int64_t>::max();
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DATA_RAW_LOADER_HPP
