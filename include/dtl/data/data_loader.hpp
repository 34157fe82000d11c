// dtl — DataLoader: a dataset, a batch size, and the sampler pipeline that orders it. What
// build_training_data_loader / build_validation_data_loader return. The Trainer adapts it as
// Determined's adapt_batch_sampler does: training = repeat + shard(rank, world) + skip(done),
// validation = shard only; `shuffle` is the reproducible (numpy-compatible) shuffle, seeded from
// the trial seed, so a resumed run sees the same order as an uninterrupted one.
#ifndef DTL_DATA_DATA_LOADER_HPP
#define DTL_DATA_DATA_LOADER_HPP

#include <torch/torch.h>

#include <dtl/data/batch.hpp>
#include <dtl/data/collate.hpp>
#include <dtl/data/dataset.hpp>
#include <dtl/errors.hpp>
#include <dtl/samplers/pipeline.hpp>

#include <cstdint>
#include <iterator>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dtl {

/// DataLoader settings (torch.utils.data.DataLoader's names).
struct DataLoaderOptions {
  std::int64_t batch_size = 1;
  bool shuffle = false;    ///< reproducible shuffle, a new permutation each epoch
  bool drop_last = false;  ///< drop a last, smaller batch
  /// Shuffle seed when the loader is iterated directly; the Trainer uses the trial seed instead.
  std::uint64_t seed = 0;
};

/// How the Trainer adapts a loader (Determined's `get_data_loader(repeat, skip, num_replicas, rank)`;
/// repeat is the choice between adapt_training and adapt_evaluation).
struct AdaptOptions {
  std::int64_t skip = 0;  ///< batches of this rank's stream to skip (= global steps already done)
  std::int64_t rank = 0;
  std::int64_t world = 1;
  std::uint64_t seed = 0;
};

namespace detail {

/// The loader's batch sampler before adaptation: shuffle (or not), then batch.
inline auto base_batch_pipeline(std::int64_t n, const DataLoaderOptions& o, std::uint64_t seed) {
  return samplers::sequential(n) | samplers::shuffle(seed, o.shuffle) | samplers::batch(o.batch_size, o.drop_last);
}
inline auto training_pipeline(std::int64_t n, const DataLoaderOptions& o, const AdaptOptions& a) {
  return base_batch_pipeline(n, o, a.seed) | samplers::repeat() | samplers::shard(a.rank, a.world) |
         samplers::skip(a.skip);
}
inline auto evaluation_pipeline(std::int64_t n, const DataLoaderOptions& o, const AdaptOptions& a) {
  return base_batch_pipeline(n, o, a.seed) | samplers::shard(a.rank, a.world);
}

template <class D, class C, bool Gather>
struct loader_batch {
  using type = std::remove_cvref_t<decltype(std::declval<const C&>()(std::declval<std::span<example_t<D>>>()))>;
};
template <class D, class C>
struct loader_batch<D, C, true> {
  using type = std::remove_cvref_t<decltype(std::declval<const D&>().get_batch(std::span<const std::int64_t>{}))>;
};

}  // namespace detail

/// A map-style dataset with a batch sampler and a collate function.
///   auto build_training_data_loader() {
///     return dtl::DataLoader(train_set, {.batch_size = ctx.get_per_slot_batch_size(), .shuffle = true});
///   }
/// A dataset with `get_batch(indices)` (e.g. TensorDataset) is gathered in one call per batch;
/// otherwise examples are fetched with `get(i)` and combined by `collate`.
template <Dataset D, class Collate = DefaultCollate>
class DataLoader {
 public:
  DataLoader(D dataset, DataLoaderOptions options, Collate collate = {})
      : dataset_(std::move(dataset)), options_(options), collate_(std::move(collate)) {
    if (options_.batch_size < 1)
      throw DataError("dtl::DataLoader: batch_size must be >= 1 (got " + std::to_string(options_.batch_size) + ")");
  }

  /// Batches gathered in one call when the dataset can and no custom collate was given.
  static constexpr bool gathers_batches = BatchedDataset<D> && std::is_same_v<Collate, DefaultCollate>;

  using example_type = example_t<D>;
  using batch_type = typename detail::loader_batch<D, Collate, gathers_batches>::type;

  /// Batches in one pass (`len(batch_sampler)`).
  [[nodiscard]] std::int64_t size() const {
    const auto n = dataset_size();
    return options_.drop_last ? n / options_.batch_size : (n + options_.batch_size - 1) / options_.batch_size;
  }
  /// The epoch length the Trainer counts in: the chief's batches per epoch when sharded over
  /// `world` ranks (`len(bs) // world + (len(bs) % world > 0)`).
  [[nodiscard]] std::int64_t epoch_length(std::int64_t world) const {
    const auto b = size();
    return b / world + (b % world > 0 ? 1 : 0);
  }

  [[nodiscard]] const D& dataset() const noexcept { return dataset_; }
  [[nodiscard]] const DataLoaderOptions& options() const noexcept { return options_; }

  /// Fetches and collates the batch with these example indices.
  [[nodiscard]] batch_type fetch(std::span<const std::int64_t> indices) const {
    if constexpr (gathers_batches) {
      return dataset_.get_batch(indices);
    } else {
      std::vector<example_type> examples;
      examples.reserve(indices.size());
      for (auto i : indices) examples.push_back(dataset_.get(i));
      return collate_(std::span<example_type>(examples));
    }
  }

  /// A stream of batches over a sampler pipeline: an input range whose iterator fetches the
  /// batch on first dereference. Keep the stream alive while iterating it.
  template <class Pipeline>
  class Stream {
   public:
    Stream(const DataLoader& loader, Pipeline pipeline) : loader_(&loader), pipeline_(std::move(pipeline)) {}

    class iterator {
     public:
      using value_type = batch_type;
      using difference_type = std::ptrdiff_t;
      iterator() = default;
      iterator(const DataLoader* l, std::ranges::iterator_t<Pipeline> it, std::ranges::sentinel_t<Pipeline> end)
          : loader_(l), it_(std::move(it)), end_(std::move(end)) {}
      batch_type& operator*() const {
        if (!current_) current_.emplace(loader_->fetch(std::span<const std::int64_t>(*it_)));
        return *current_;
      }
      iterator& operator++() {
        ++it_;
        current_.reset();
        return *this;
      }
      void operator++(int) { ++*this; }
      friend bool operator==(const iterator& i, std::default_sentinel_t) { return i.it_ == i.end_; }

     private:
      const DataLoader* loader_ = nullptr;
      std::ranges::iterator_t<Pipeline> it_{};
      std::ranges::sentinel_t<Pipeline> end_{};
      mutable std::optional<batch_type> current_;
    };

    iterator begin() { return iterator(loader_, std::ranges::begin(pipeline_), std::ranges::end(pipeline_)); }
    std::default_sentinel_t end() const noexcept { return {}; }

   private:
    const DataLoader* loader_;
    Pipeline pipeline_;
  };

  /// The streams the Trainer consumes: training repeats, then shards and skips (`skip` is
  /// ignored for evaluation, which only shards).
  [[nodiscard]] auto adapt_training(const AdaptOptions& a) const {
    check_world(a);
    return Stream<decltype(detail::training_pipeline(0, options_, a))>(
        *this, detail::training_pipeline(dataset_size(), options_, a));
  }
  [[nodiscard]] auto adapt_evaluation(const AdaptOptions& a) const {
    check_world(a);
    return Stream<decltype(detail::evaluation_pipeline(0, options_, a))>(
        *this, detail::evaluation_pipeline(dataset_size(), options_, a));
  }

  /// One pass in order (shuffled with `options().seed` if `shuffle`), as iterating Determined's
  /// DataLoader does.
  [[nodiscard]] auto stream() const { return adapt_evaluation({.seed = options_.seed}); }

 private:
  [[nodiscard]] std::int64_t dataset_size() const { return static_cast<std::int64_t>(dataset_.size()); }
  static void check_world(const AdaptOptions& a) {
    if (a.world < 1 || a.rank < 0 || a.rank >= a.world)
      throw DataError("dtl::DataLoader: rank " + std::to_string(a.rank) + " is not in [0, " + std::to_string(a.world) + ")");
  }

  D dataset_;
  DataLoaderOptions options_;
  Collate collate_;
};

template <class D, class Collate = DefaultCollate>
DataLoader(D, DataLoaderOptions, Collate = {}) -> DataLoader<D, Collate>;

}  // namespace dtl

#endif  // DTL_DATA_DATA_LOADER_HPP
