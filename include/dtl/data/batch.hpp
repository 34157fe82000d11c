// dtl — nested batches: a tensor, a number, or a tuple / pair / vector / array / map<string, …>
// of those, nested in any mix (the structures Determined's to_device and data_length accept).
// `to_device` moves every tensor; `data_length` finds the batch size.
#ifndef DTL_DATA_BATCH_HPP
#define DTL_DATA_BATCH_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/detail/diagnostics.hpp>
#include <dtl/errors.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

template <class T>
struct is_tuple_like : std::false_type {};
template <class... Ts>
struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class T, std::size_t N>
struct is_tuple_like<std::array<T, N>> : std::true_type {};

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

template <class T>
struct is_string_map : std::false_type {};
template <class V, class C, class A>
struct is_string_map<std::map<std::string, V, C, A>> : std::true_type {};
template <class V, class H, class E, class A>
struct is_string_map<std::unordered_map<std::string, V, H, E, A>> : std::true_type {};

template <class T>
inline constexpr bool is_tensor_v = std::is_same_v<std::remove_cvref_t<T>, torch::Tensor>;

/// Whether any (All = false) or every (All = true) leaf of a structure is a tensor, decided from
/// the type alone: a leaf is whatever is not a tuple, pair, array, vector or string map.
template <class T, bool All>
constexpr bool tensor_leaves() {
  using U = std::remove_cvref_t<T>;
  if constexpr (is_tensor_v<U>) {
    return true;
  } else if constexpr (is_tuple_like<U>::value) {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (All)
        return (tensor_leaves<std::tuple_element_t<I, U>, All>() && ...);
      else
        return (tensor_leaves<std::tuple_element_t<I, U>, All>() || ...);
    }
    (std::make_index_sequence<std::tuple_size_v<U>>{});
  } else if constexpr (is_vector<U>::value) {
    return tensor_leaves<typename U::value_type, All>();
  } else if constexpr (is_string_map<U>::value) {
    return tensor_leaves<typename U::mapped_type, All>();
  } else {
    return false;
  }
}

/// Does a structure contain a tensor anywhere?
template <class T>
constexpr bool contains_tensor() {
  return tensor_leaves<T, false>();
}

/// Is every leaf of the structure a tensor (no number or string a step could read on the host)?
template <class T>
constexpr bool only_tensor_leaves() {
  return tensor_leaves<T, true>();
}

}  // namespace detail

namespace detail {
/// Applies `f` to every defined tensor of a nested batch and rebuilds the structure around the
/// results; values that are not tensors pass through unchanged.
template <class T, class F>
[[nodiscard]] std::remove_cvref_t<T> transform_tensors(T&& data, F& f) {
  using U = std::remove_cvref_t<T>;
  if constexpr (!contains_tensor<U>()) {
    return std::forward<T>(data);
  } else if constexpr (is_tensor_v<U>) {
    if (!data.defined()) return std::forward<T>(data);
    return f(std::forward<T>(data));
  } else if constexpr (is_tuple_like<U>::value) {
    return std::apply([&](auto&&... xs) { return U{transform_tensors(std::forward<decltype(xs)>(xs), f)...}; },
                      std::forward<T>(data));
  } else {  // vector or string map
    U out = std::forward<T>(data);
    if constexpr (is_vector<U>::value) {
      for (auto& x : out) x = transform_tensors(std::move(x), f);
    } else {
      for (auto& [k, v] : out) v = transform_tensors(std::move(v), f);
    }
    return out;
  }
}

/// Calls `f(tensor)` on every tensor of a nested batch (undefined ones too), depth-first in a
/// fixed order: two batches of the same structure visit matching tensors in the same order.
template <class T, class F>
void for_each_tensor(T& data, F&& f) {
  using U = std::remove_cvref_t<T>;
  if constexpr (is_tensor_v<U>) {
    f(data);
  } else if constexpr (!contains_tensor<U>()) {
    return;
  } else if constexpr (is_tuple_like<U>::value) {
    std::apply([&](auto&... xs) { (for_each_tensor(xs, f), ...); }, data);
  } else if constexpr (is_vector<U>::value) {
    for (auto& x : data) for_each_tensor(x, f);
  } else {
    for (auto& [k, v] : data) for_each_tensor(v, f);
  }
}

}  // namespace detail

/// Moves every tensor of a nested batch to `device`; everything else passes through unchanged.
/// Tensors already there are not copied. `non_blocking` overlaps the copy of a tensor in pinned
/// memory with the host's work (other tensors are copied as usual: a non-blocking copy from
/// pageable memory would gain nothing).
///   auto batch = dtl::to_device(std::move(batch), torch::kCUDA);
template <class T>
[[nodiscard]] std::remove_cvref_t<T> to_device(T&& data, const torch::Device& device, bool non_blocking = false) {
  auto move = [&](torch::Tensor t) {
    return t.device() == device ? t : t.to(device, non_blocking && t.device().is_cpu() && t.is_pinned());
  };
  return detail::transform_tensors(std::forward<T>(data), move);
}

/// Copies every CPU tensor of a nested batch into page-locked memory, so that a later
/// `to_device(..., non_blocking=true)` overlaps the copy to the GPU (torch's `pin_memory=True`).
template <class T>
[[nodiscard]] std::remove_cvref_t<T> pin_memory(T&& data) {
  auto pin = [](torch::Tensor t) { return t.is_pinned() || !t.device().is_cpu() ? t : t.pin_memory(); };
  return detail::transform_tensors(std::forward<T>(data), pin);
}

/// The number of records in a batch: the first dimension of its first tensor, searched
/// depth-first. Unlike Determined's `data_length` this recurses, so `{"x": [t, …]}` and
/// `(map, tensor)` work; a vector of plain values counts its elements.
template <class T>
[[nodiscard]] std::int64_t data_length(const T& data) {
  using U = std::remove_cvref_t<T>;
  if constexpr (detail::is_tensor_v<U>) {
    if (!data.defined() || data.dim() == 0)
      throw DataError("dtl: data_length: a batch's first tensor must have a batch dimension (got a 0-d tensor)");
    return data.size(0);
  } else if constexpr (detail::is_tuple_like<U>::value) {
    if constexpr (std::tuple_size_v<U> == 0) {
      throw DataError("dtl: data_length: empty tuple");
    } else {
      return data_length(std::get<0>(data));
    }
  } else if constexpr (detail::is_vector<U>::value) {
    if (data.empty()) throw DataError("dtl: data_length: empty list has no batch size");
    if constexpr (detail::contains_tensor<typename U::value_type>())
      return data_length(data.front());
    else
      return static_cast<std::int64_t>(data.size());
  } else if constexpr (detail::is_string_map<U>::value) {
    if (data.empty()) throw DataError("dtl: data_length: empty map has no batch size");
    return data_length(data.begin()->second);
  } else {
    static_assert(detail::contains_tensor<U>(), DTL_DIAG_BATCH_NO_TENSOR);
    return 0;
  }
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DATA_BATCH_HPP
