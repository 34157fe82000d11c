// dtl — datasets: the Dataset concept (size + get), TensorDataset, and a transform adaptor.
#ifndef DTL_DATA_DATASET_HPP
#define DTL_DATA_DATASET_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/errors.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {

/// A map-style dataset: `size()` examples, `get(i)` returns example i (any collatable type).
/// Copies should be cheap (hold tensors or a shared_ptr): loaders keep one by value.
namespace detail {
template <class T>
concept TensorLike = std::same_as<std::remove_cvref_t<T>, torch::Tensor>;
template <std::size_t>
using tensor_for = torch::Tensor;
template <std::size_t N, class = std::make_index_sequence<N>>
struct tensor_tuple;
template <std::size_t N, std::size_t... I>
struct tensor_tuple<N, std::index_sequence<I...>> {
  using type = std::tuple<tensor_for<I>...>;
};
}  // namespace detail

template <class D>
concept Dataset = requires(const D& d, std::int64_t i) {
  { d.size() } -> std::convertible_to<std::int64_t>;
  d.get(i);
};

/// A dataset that can also fetch a whole batch at once (`get_batch(indices)`), which the
/// DataLoader then uses instead of `get` + collate: one gather instead of `batch_size` copies.
template <class D>
concept BatchedDataset = Dataset<D> && requires(const D& d, std::span<const std::int64_t> idx) {
  d.get_batch(idx);
};

template <Dataset D>
using example_t = std::remove_cvref_t<decltype(std::declval<const D&>().get(std::int64_t{}))>;

/// Tensors that share their first dimension; example i is the tuple of their i-th rows.
///   dtl::TensorDataset data(images, labels);   // batch: std::tuple<Tensor, Tensor>
template <std::size_t N>
class TensorDataset {
 public:
  // clang-format 14 runs a requires-clause into the declaration it constrains:
  // clang-format off
  template <detail::TensorLike... Ts>
    requires(sizeof...(Ts) == N)
  explicit TensorDataset(Ts&&... tensors) : tensors_{std::forward<Ts>(tensors)...} {
    // clang-format on
    std::apply(
        [](const auto& first, const auto&... rest) {
          if (first.dim() == 0) throw DataError("dtl::TensorDataset: tensors need a first (example) dimension");
          if (((rest.dim() == 0 || rest.size(0) != first.size(0)) || ...))
            throw DataError("dtl::TensorDataset: all tensors must have the same first dimension (" +
                            std::to_string(first.size(0)) + " examples in the first)");
        },
        tensors_);
  }

  [[nodiscard]] std::int64_t size() const { return std::get<0>(tensors_).size(0); }
  [[nodiscard]] auto get(std::int64_t i) const {
    return std::apply([i](const auto&... t) { return std::tuple{t[i]...}; }, tensors_);
  }
  /// The examples `idx` as one batch. A run of consecutive indices (sequential batches, the
  /// default `shuffle = false`) is a view of the data — `narrow`, as a hand-written loop slices
  /// it, no copy; any other order is gathered (`index_select`, a copy). A batch that is a view
  /// shares its memory with the dataset, so changing it in place would change the data: the next
  /// batch then fails with a DataError that says so, instead of training on silently changed data.
  [[nodiscard]] auto get_batch(std::span<const std::int64_t> idx) const {
    check_unmodified();
    const auto n = static_cast<std::int64_t>(idx.size());
    if (n > 0 && idx.back() - idx.front() == n - 1 && std::adjacent_find(idx.begin(), idx.end(), [](auto a, auto b) {
                                                         return b != a + 1;
                                                       }) == idx.end())
      return std::apply([&](const auto&... t) { return std::tuple{t.narrow(0, idx.front(), n)...}; }, tensors_);
    // from_blob borrows the sampler's buffer: no copy of the indices.
    auto index = torch::from_blob(const_cast<std::int64_t*>(idx.data()),  // NOLINT: read-only use
                                  {n}, torch::kLong);
    return std::apply([&](const auto&... t) { return std::tuple{t.index_select(0, index)...}; }, tensors_);
  }
  [[nodiscard]] const auto& tensors() const noexcept { return tensors_; }

 private:
  /// Every tensor's version counter as it was when the dataset was made: an in-place change of
  /// the data (through a batch that is a view of it) moves it.
  void check_unmodified() const {
    std::size_t k = 0;
    const bool same = std::apply([&](const auto&... t) { return ((t._version() == versions_[k++]) && ...); }, tensors_);
    if (!same)
      throw DataError(
          "dtl::TensorDataset: its tensors were changed in place after it was made. A batch of consecutive examples "
          "is a view of the data, so changing such a batch in place (x.mul_(...), x.sub_(...)) changes the dataset "
          "itself: copy the batch first (x = x.clone()), or change the tensors before making the dataset");
  }

  typename detail::tensor_tuple<N>::type tensors_;
  std::array<std::uint32_t, N> versions_ =
      std::apply([](const auto&... t) { return std::array<std::uint32_t, N>{static_cast<std::uint32_t>(t._version())...}; },
                 tensors_);
};

template <class... Ts>
TensorDataset(Ts&&...) -> TensorDataset<sizeof...(Ts)>;

/// A dataset whose examples are `fn(base.get(i))`: per-example transforms and augmentation.
///   auto normalized = dtl::MapDataset(raw, [](auto ex) { auto [x, y] = ex; return std::tuple{x / 255.0, y}; });
template <Dataset Base, class Fn>
class MapDataset {
 public:
  MapDataset(Base base, Fn fn) : base_(std::move(base)), fn_(std::move(fn)) {}
  [[nodiscard]] std::int64_t size() const { return static_cast<std::int64_t>(base_.size()); }
  [[nodiscard]] auto get(std::int64_t i) const { return fn_(base_.get(i)); }

 private:
  Base base_;
  Fn fn_;
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DATA_DATASET_HPP
