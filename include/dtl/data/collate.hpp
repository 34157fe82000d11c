// dtl — default collate: turns a vector of examples into one batch of the same structure, as
// torch's default_collate does (tensors stacked, numbers to tensors, containers element-wise).
#ifndef DTL_DATA_COLLATE_HPP
#define DTL_DATA_COLLATE_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/data/batch.hpp>
#include <dtl/errors.hpp>

#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
/// torch's `default_collate` for C++ example types.
///   Tensor            -> stacked Tensor (new leading dimension)
///   arithmetic        -> 1-d Tensor (int64 for integers, float64 for floating point)
///   tuple / pair      -> tuple / pair of collated members
///   vector<T>         -> vector of collated positions (every example the same length)
///   map<string, T>    -> map of collated values (every example the same keys)
///   anything else     -> vector of the values
struct DefaultCollate {
  template <class E>
  auto operator()(std::span<E> examples) const {
    using U = std::remove_cvref_t<E>;
    if (examples.empty()) throw DataError("dtl: collate: a batch needs at least one example");
    if constexpr (detail::is_tensor_v<U>) {
      return torch::stack(std::vector<torch::Tensor>(examples.begin(), examples.end()));
    } else if constexpr (std::is_arithmetic_v<U>) {
      std::vector<std::conditional_t<std::is_floating_point_v<U>, double, std::int64_t>> v(examples.begin(),
                                                                                            examples.end());
      return torch::tensor(v);
    } else if constexpr (detail::is_tuple_like<U>::value && !detail::is_vector<U>::value) {
      return collate_tuple(examples, std::make_index_sequence<std::tuple_size_v<U>>{});
    } else if constexpr (detail::is_vector<U>::value) {
      using V = typename U::value_type;
      const auto n = examples.front().size();
      std::vector<decltype((*this)(std::declval<std::span<V>>()))> out;
      out.reserve(n);
      std::vector<V> column(examples.size());
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t e = 0; e < examples.size(); ++e) {
          if (examples[e].size() != n)
            throw DataError("dtl: collate: examples of one batch are lists of different lengths (" +
                            std::to_string(n) + " and " + std::to_string(examples[e].size()) + ")");
          column[e] = examples[e][i];
        }
        out.push_back((*this)(std::span<V>(column)));
      }
      return out;
    } else if constexpr (detail::is_string_map<U>::value) {
      using V = typename U::mapped_type;
      std::map<std::string, decltype((*this)(std::declval<std::span<V>>()))> out;
      std::vector<V> column(examples.size());
      for (const auto& [key, unused] : examples.front()) {
        for (std::size_t e = 0; e < examples.size(); ++e) {
          auto it = examples[e].find(key);
          if (it == examples[e].end())
            throw DataError("dtl: collate: example " + std::to_string(e) + " of a batch lacks key '" + key + "'");
          column[e] = it->second;
        }
        out.emplace(key, (*this)(std::span<V>(column)));
      }
      return out;
    } else {
      return std::vector<U>(examples.begin(), examples.end());
    }
  }

 private:
  template <class E, std::size_t... I>
  auto collate_tuple(std::span<E> examples, std::index_sequence<I...>) const {
    using U = std::remove_cvref_t<E>;
    auto column = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
      using V = std::tuple_element_t<J, U>;
      std::vector<std::remove_cvref_t<V>> col;
      col.reserve(examples.size());
      for (auto& e : examples) col.push_back(std::get<J>(e));
      return (*this)(std::span<std::remove_cvref_t<V>>(col));
    };
    if constexpr (sizeof...(I) == 2 && std::is_same_v<U, std::pair<std::tuple_element_t<0, U>, std::tuple_element_t<1, U>>>)
      return std::pair{column(std::integral_constant<std::size_t, I>{})...};
    else
      return std::tuple{column(std::integral_constant<std::size_t, I>{})...};
  }
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DATA_COLLATE_HPP
