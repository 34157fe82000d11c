// dtl — DataLoader: a dataset, a batch size, and the sampler pipeline that orders it. What
// build_training_data_loader / build_validation_data_loader return. The Trainer adapts it as
// Determined's adapt_batch_sampler does: training = repeat + shard(rank, world) + skip(done),
// validation = shard only; `shuffle` is the reproducible (numpy-compatible) shuffle, seeded from
// the trial seed, so a resumed run sees the same order as an uninterrupted one. With
// `num_workers > 0`, worker threads fetch and collate ahead of the training thread, in order.
#ifndef DTL_DATA_DATA_LOADER_HPP
#define DTL_DATA_DATA_LOADER_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/data/batch.hpp>
#include <dtl/data/collate.hpp>
#include <dtl/data/dataset.hpp>
#include <dtl/data/prefetcher.hpp>
#include <dtl/detail/always_false.hpp>
#include <dtl/detail/diagnostics.hpp>
#include <dtl/detail/specialization_of.hpp>
#include <dtl/errors.hpp>
#include <dtl/samplers/pipeline.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

/// DataLoader settings (torch.utils.data.DataLoader's names).
struct DataLoaderOptions {
  std::int64_t batch_size = 1;
  bool shuffle = false;    ///< reproducible shuffle, a new permutation each epoch
  bool drop_last = false;  ///< drop a last, smaller batch
  /// Worker threads that fetch and collate batches ahead of the training thread (0: fetch on the
  /// training thread when a batch is needed). The dataset's `get`/`get_batch` and the collate
  /// function are then called from several threads at once and must be safe for that (reading
  /// tensors is; TensorDataset and MapDataset over a thread-safe function are).
  std::int64_t num_workers = 0;
  /// Batches each worker loads ahead (torch's default, 2): `num_workers * prefetch_factor` in flight.
  std::int64_t prefetch_factor = 2;
  /// Copy batches into page-locked memory in the workers, so the copy to the GPU can overlap
  /// compute. Ignored, as torch does, when no CUDA device is available.
  bool pin_memory = false;
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
  /// A sampler state saved by a previous run (Stream::state()): the stream seeks to it instead of
  /// skipping. Its position must equal `skip`.
  const samplers::sampler_state* resume = nullptr;
};

namespace detail {

/// The iterator of a stream that holds its current batch itself: a pointer back to the stream,
/// which provides `current()`, `advance()` and `at_end()` (and befriends this class).
template <class S, class B>
class stream_iterator {
 public:
  using value_type = B;
  using difference_type = std::ptrdiff_t;
  stream_iterator() = default;
  explicit stream_iterator(S* s) : s_(s) {}
  B& operator*() const { return s_->current(); }
  stream_iterator& operator++() {
    s_->advance();
    return *this;
  }
  void operator++(int) { ++*this; }
  friend bool operator==(const stream_iterator& i, std::default_sentinel_t) { return i.done(); }

 private:
  bool done() const { return s_->at_end(); }
  S* s_ = nullptr;
};

/// What torch.utils.data.DataLoader's iterator does as it starts (`_BaseDataLoaderIter.__init__`,
/// for every pass without a `generator`): one int64 drawn from the global CPU generator, its
/// workers' base seed. The draw moves the stream that dropout and every later draw of the trial
/// use, so dtl's loaders make it too: a trial's random numbers then follow Python's. The same
/// ATen op, so the same generator steps (two 32-bit outputs of the Mersenne twister).
inline void draw_torch_base_seed() {
  torch::NoGradGuard no_grad;
  (void)torch::empty({}, torch::TensorOptions().dtype(torch::kInt64)).random_();
}

/// The DataLoader's own batch sampler: a tag that means "build it from batch_size, shuffle and
/// drop_last" (torch's default RandomSampler/SequentialSampler + BatchSampler).
struct default_batch_sampler {};

template <class D, class C, bool Gather>
struct loader_batch {
  using type = std::remove_cvref_t<decltype(std::declval<const C&>()(std::declval<std::span<example_t<D>>>()))>;
};
template <class D, class C>
struct loader_batch<D, C, true> {
  using type = std::remove_cvref_t<decltype(std::declval<const D&>().get_batch(std::span<const std::int64_t>{}))>;
};

/// `[3, 17, 4, …]`: the first few indices of a batch, for error messages.
inline std::string preview_indices(std::span<const std::int64_t> idx) {
  std::string s = "[";
  for (std::size_t i = 0; i < idx.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + (idx.size() > 8 ? ", ...]" : "]");
}

inline std::string current_exception_what() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

/// Whether a pipeline batches a repeated index stream (`... | repeat() | batch(b)`, Python's
/// `BatchSampler(RepeatSampler(sampler), b, drop_last)`): batches that run across epoch ends.
template <class N>
inline constexpr bool repeats_before_batch = false;
template <class U>
inline constexpr bool repeats_before_batch<batch_node<U>> = U::has_repeat;

/// A batch sampler the Trainer can adapt: one epoch of index batches, built with dtl's samplers
/// and without the stages the Trainer adds itself — or an endless one that repeats its indices
/// before batching them, which the Trainer only shards and skips.
template <class P>
consteval bool check_batch_sampler() {
  if constexpr (!specialization_of<P, samplers::pipeline>) {
    static_assert(always_false<P>, DTL_DIAG_LOADER_SAMPLER_NOT_PIPELINE);
    return false;
  } else if constexpr (!P::is_batched) {
    static_assert(always_false<P>, DTL_DIAG_LOADER_SAMPLER_NOT_BATCHED);
    return false;
  } else if constexpr ((P::node_type::has_repeat && !repeats_before_batch<typename P::node_type>) ||
                       P::node_type::has_shard || P::node_type::has_skip) {
    static_assert(always_false<P>, DTL_DIAG_LOADER_SAMPLER_NOT_ONE_EPOCH);
    return false;
  } else {
    return true;
  }
}

}  // namespace detail

/// A map-style dataset with a batch sampler and a collate function.
///   auto build_training_data_loader() {
///     return dtl::DataLoader(train_set, {.batch_size = ctx.get_per_slot_batch_size(), .shuffle = true,
///                                        .num_workers = 2});
///   }
///   // or with a batch sampler of your own (torch's `batch_sampler=`):
///   return dtl::DataLoader(train_set, dtl::samplers::sequential(n) | dtl::samplers::batch(8, true));
/// A dataset with `get_batch(indices)` (e.g. TensorDataset) is gathered in one call per batch;
/// otherwise examples are fetched with `get(i)` and combined by `collate`.
template <Dataset D, class Collate = DefaultCollate, class BatchSampler = detail::default_batch_sampler>
class DataLoader {
  static constexpr bool has_user_sampler = !std::is_same_v<BatchSampler, detail::default_batch_sampler>;
  /// A user batch sampler that repeats its indices before batching them (batches across epoch ends).
  static constexpr bool repeats_indices = [] {
    if constexpr (has_user_sampler)
      return detail::repeats_before_batch<typename BatchSampler::node_type>;
    else
      return false;
  }();
  using sampler_storage = std::conditional_t<has_user_sampler, BatchSampler, std::monostate>;

 public:
  DataLoader(D dataset, DataLoaderOptions options, Collate collate = {}) requires(!has_user_sampler)
      : dataset_(std::move(dataset)), options_(options), collate_(std::move(collate)) {
    if (options_.batch_size < 1)
      throw DataError("dtl::DataLoader: batch_size must be >= 1 (got " + std::to_string(options_.batch_size) + ")");
    check_workers();
  }

  /// torch's `DataLoader(dataset, batch_sampler=...)`: `batch_size`, `shuffle` and `drop_last`
  /// must keep their defaults, since the batch sampler decides them.
  // clang-format 14 runs a requires-clause into the declaration it constrains:
  // clang-format off
  DataLoader(D dataset, BatchSampler batch_sampler, DataLoaderOptions options = {}, Collate collate = {})
    requires(has_user_sampler && detail::check_batch_sampler<BatchSampler>())
      // clang-format on
      : dataset_(std::move(dataset)),
        options_(options),
        collate_(std::move(collate)),
        sampler_(std::move(batch_sampler)) {
    if (options_.batch_size != 1 || options_.shuffle || options_.drop_last)
      throw DataError(
          "dtl::DataLoader: batch_sampler is mutually exclusive with batch_size, shuffle and drop_last "
          "(as in torch.utils.data.DataLoader): leave those at their defaults");
    check_workers();
  }

  /// Batches gathered in one call when the dataset can and no custom collate was given.
  static constexpr bool gathers_batches = BatchedDataset<D> && std::is_same_v<Collate, DefaultCollate>;

  using example_type = example_t<D>;
  using batch_type = typename detail::loader_batch<D, Collate, gathers_batches>::type;

  /// Batches in one pass (`len(batch_sampler)`).
  [[nodiscard]] std::int64_t size() const {
    if constexpr (has_user_sampler) {
      return sampler_.size();
    } else {
      const auto n = dataset_size();
      return options_.drop_last ? n / options_.batch_size : (n + options_.batch_size - 1) / options_.batch_size;
    }
  }
  /// The epoch length the Trainer counts in: the chief's batches per epoch when sharded over
  /// `world` ranks (`len(bs) // world + (len(bs) % world > 0)`).
  [[nodiscard]] std::int64_t epoch_length(std::int64_t world) const {
    const auto b = size();
    return b / world + (b % world > 0 ? 1 : 0);
  }

  [[nodiscard]] const D& dataset() const noexcept { return dataset_; }
  [[nodiscard]] const DataLoaderOptions& options() const noexcept { return options_; }

  /// What a saved sampler state depends on; a checkpoint's state is only reused by a loader that
  /// describes itself the same way (otherwise the Trainer falls back to skipping).
  [[nodiscard]] std::string describe(const AdaptOptions& a) const {
    std::string s = "size=" + std::to_string(dataset_size()) + " rank=" + std::to_string(a.rank) +
                    " world=" + std::to_string(a.world) + " seed=" + std::to_string(a.seed);
    if constexpr (has_user_sampler)
      return s + " batch_sampler batches=" + std::to_string(sampler_.size());
    else
      return s + " batch_size=" + std::to_string(options_.batch_size) + " shuffle=" + std::to_string(options_.shuffle) +
             " drop_last=" + std::to_string(options_.drop_last);
  }

  /// Fetches and collates the batch with these example indices (on a worker thread when
  /// num_workers > 0). An exception from the dataset or the collate function comes back as a
  /// dtl::DataError naming the index (or the batch's indices) that failed, with the original
  /// exception nested in it.
  [[nodiscard]] batch_type fetch(std::span<const std::int64_t> indices) const {
    // Loading never builds autograd graphs (torch's worker processes run without grad too).
    torch::NoGradGuard no_grad;
    if (pin_) return pin_memory(fetch_unpinned(indices));
    return fetch_unpinned(indices);
  }

  /// A stream of batches over a sampler pipeline: an input range over the loader's batches.
  /// With 0 workers a batch is fetched on first dereference; with workers, up to
  /// `num_workers * prefetch_factor` batches are loaded ahead, in order. Destroying the stream
  /// mid-epoch stops the workers after the batch each is loading. Not movable once begun: keep
  /// it where it is while iterating it.
  template <class Pipeline>
  class Stream {
   public:
    Stream(const DataLoader& loader, Pipeline pipeline, bool track_state, bool draws)
        : loader_(&loader), pipeline_(std::move(pipeline)), track_state_(track_state), draws_(draws) {}
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&&) noexcept = default;  ///< only before begin(): iterators point at the stream
    Stream& operator=(Stream&&) noexcept = default;

    using iterator = detail::stream_iterator<Stream, batch_type>;

    /// Starts the pass (or continues from the state it was restored to), drawing torch's base
    /// seed as a Python iterator would (not for the Trainer's training stream, whose draw the
    /// Trainer makes where Determined creates its iterator: before a checkpoint is loaded).
    iterator begin() {
      if (draws_) detail::draw_torch_base_seed();
      it_.emplace(pipeline_.begin());
      if (loader_->options_.num_workers > 0) {
        prefetcher_ = std::make_unique<detail::Prefetcher<DataLoader>>(*loader_, loader_->options_.num_workers,
                                                                       loader_->options_.prefetch_factor);
        fill();
      }
      return iterator(this);
    }
    std::default_sentinel_t end() const noexcept { return {}; }

    /// Where to resume after the batches consumed so far (iterated past with ++): a state to
    /// restore with AdaptOptions::resume. Before the first batch it is the state the stream was
    /// restored from, if any. nullopt when not tracked or not exactly known (a batch was
    /// dereferenced but not yet passed); the Trainer then resumes by skipping.
    [[nodiscard]] std::optional<samplers::sampler_state> state() const {
      if (!track_state_) return std::nullopt;
      if (!consumed_any_) return initial_;
      if (prefetcher_) return consumed_state_;
      if (pending_advance_) return pipeline_.state();
      return std::nullopt;
    }

    /// Seeks the pipeline to a saved state before begin().
    void restore(const samplers::sampler_state& s) {
      pipeline_.restore(s);
      initial_ = s;
    }

   private:
    friend iterator;
    batch_type& current() {
      if (!current_) {
        if (prefetcher_) {
          current_.emplace(prefetcher_->take(track_state_ ? &current_state_ : nullptr));
          fill();
        } else {
          settle();
          current_.emplace(loader_->fetch(**it_));
        }
      }
      return *current_;
    }
    void advance() {
      if (!current_) static_cast<void>(current());  // ++ without *: the batch is still consumed
      current_.reset();
      consumed_any_ = true;
      if (prefetcher_) {
        if (track_state_) std::swap(consumed_state_, current_state_);
      } else {
        // The pipeline moves on lazily, so that state() still describes the consumed batch.
        pending_advance_ = true;
      }
    }
    bool at_end() {
      if (current_) return false;
      if (prefetcher_) return !prefetcher_->pending();
      settle();
      return *it_ == std::default_sentinel;
    }
    void settle() {
      if (pending_advance_) {
        ++*it_;
        pending_advance_ = false;
      }
    }
    // Hands index batches to the workers until the ring is full or the pipeline ends.
    void fill() {
      while (prefetcher_->has_room()) {
        settle();
        if (*it_ == std::default_sentinel) return;
        const std::span<const std::int64_t> indices = **it_;
        if (track_state_)
          prefetcher_->submit(indices, [&](samplers::sampler_state& s) { pipeline_.state_into(s); });
        else
          prefetcher_->submit(indices, nullptr);
        pending_advance_ = true;
      }
    }

    const DataLoader* loader_;
    Pipeline pipeline_;
    bool track_state_;
    bool draws_;
    std::optional<std::ranges::iterator_t<Pipeline>> it_;
    bool pending_advance_ = false;  // the pipeline iterator still points at a consumed batch
    bool consumed_any_ = false;
    std::optional<batch_type> current_;
    std::optional<samplers::sampler_state> initial_;
    samplers::sampler_state current_state_, consumed_state_;
    std::unique_ptr<detail::Prefetcher<DataLoader>> prefetcher_;
  };

  /// Each pass draws torch's base seed from the global generator, as a torch DataLoader's
  /// iterator does (detail::draw_torch_base_seed); the Trainer makes the training stream's draw.
  static constexpr bool draws_torch_base_seed = true;

  /// The streams the Trainer consumes: training repeats, then shards and skips (`skip` is
  /// ignored for evaluation, which only shards). Both are Streams over the same base sampler.
  [[nodiscard]] auto adapt_training(const AdaptOptions& a) const {
    check_world(a);
    // A stream is not movable once begun; before begin() it is built in place by guaranteed elision.
    if constexpr (repeats_indices) {  // already endless: Determined's RepeatBatchSampler never ends its first pass
      return make_stream(base_pipeline(a.seed) | samplers::shard(a.rank, a.world) | samplers::skip(a.skip), a,
                         /*track_state=*/true, /*draws=*/false);
    } else {
      auto p = base_pipeline(a.seed) | samplers::repeat() | samplers::shard(a.rank, a.world) | samplers::skip(a.skip);
      return make_stream(std::move(p), a, /*track_state=*/true, /*draws=*/false);
    }
  }
  [[nodiscard]] auto adapt_evaluation(const AdaptOptions& a) const {
    static_assert(!repeats_indices, DTL_DIAG_LOADER_REPEATING_VALIDATION);
    check_world(a);
    return make_stream(base_pipeline(a.seed) | samplers::shard(a.rank, a.world), AdaptOptions{}, false,
                       /*draws=*/true);
  }

  /// One pass in order (shuffled with `options().seed` if `shuffle`), as iterating Determined's
  /// DataLoader does.
  [[nodiscard]] auto stream() const { return adapt_evaluation({.seed = options_.seed}); }

 private:
  template <class Pipeline>
  friend class Stream;

  template <class P>
  Stream<P> make_stream(P p, const AdaptOptions& a, bool track, bool draws) const {
    Stream<P> s(*this, std::move(p), track, draws);
    if (a.resume) {
      if (a.resume->position != a.skip)
        throw DataError("dtl::DataLoader: a saved sampler state at batch " + std::to_string(a.resume->position) +
                        " cannot resume a stream that skips " + std::to_string(a.skip) + " batches");
      s.restore(*a.resume);
    }
    return s;
  }

  /// The loader's batch sampler before adaptation: the user's, or shuffle (or not) then batch.
  [[nodiscard]] auto base_pipeline(std::uint64_t seed) const {
    if constexpr (has_user_sampler)
      return sampler_;
    else
      return samplers::sequential(dataset_size()) | samplers::shuffle(seed, options_.shuffle) |
             samplers::batch(options_.batch_size, options_.drop_last);
  }

  [[nodiscard]] batch_type fetch_unpinned(std::span<const std::int64_t> indices) const {
    if constexpr (gathers_batches) {
      try {
        return dataset_.get_batch(indices);
      } catch (...) {
        std::throw_with_nested(DataError("dtl::DataLoader: dataset.get_batch failed for the batch with indices " +
                                         detail::preview_indices(indices) + ": " + detail::current_exception_what()));
      }
    } else {
      std::vector<example_type> examples;
      examples.reserve(indices.size());
      for (auto i : indices) {
        try {
          examples.push_back(dataset_.get(i));
        } catch (...) {
          std::throw_with_nested(DataError("dtl::DataLoader: dataset.get(" + std::to_string(i) +
                                           ") failed: " + detail::current_exception_what()));
        }
      }
      try {
        return collate_(std::span<example_type>(examples));
      } catch (...) {
        std::throw_with_nested(DataError("dtl::DataLoader: collate failed for the batch with indices " +
                                         detail::preview_indices(indices) + ": " + detail::current_exception_what()));
      }
    }
  }

  [[nodiscard]] std::int64_t dataset_size() const { return static_cast<std::int64_t>(dataset_.size()); }
  void check_workers() const {
    if (options_.num_workers < 0)
      throw DataError("dtl::DataLoader: num_workers must be >= 0 (got " + std::to_string(options_.num_workers) + ")");
    if (options_.prefetch_factor < 1)
      throw DataError("dtl::DataLoader: prefetch_factor must be >= 1 (got " + std::to_string(options_.prefetch_factor) +
                      ")");
  }
  static void check_world(const AdaptOptions& a) {
    if (a.world < 1 || a.rank < 0 || a.rank >= a.world)
      throw DataError("dtl::DataLoader: rank " + std::to_string(a.rank) + " is not in [0, " + std::to_string(a.world) +
                      ")");
  }

  D dataset_;
  DataLoaderOptions options_;
  Collate collate_;
  [[no_unique_address]] sampler_storage sampler_;
  bool pin_ = options_.pin_memory && torch::cuda::is_available();
};

template <class D, class Collate = DefaultCollate>
DataLoader(D, DataLoaderOptions, Collate = {}) -> DataLoader<D, Collate>;
// clang-format 14 runs a requires-clause into the declaration it constrains:
// clang-format off
template <class D, class BatchSampler, class Collate = DefaultCollate>
  requires(!std::is_convertible_v<BatchSampler, DataLoaderOptions>)
DataLoader(D, BatchSampler, DataLoaderOptions = {}, Collate = {}) -> DataLoader<D, Collate, BatchSampler>;
// clang-format on

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DATA_DATA_LOADER_HPP
