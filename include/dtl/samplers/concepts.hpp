// dtl — what a DataLoader may ask of a sampler. Only the state header is needed to check these.
#ifndef DTL_SAMPLERS_CONCEPTS_HPP
#define DTL_SAMPLERS_CONCEPTS_HPP

#include <dtl/detail/abi.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>

#include <dtl/samplers/sampler_state.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace samplers {

/// Saves and restores its position as a sampler_state (one of Sampler's requirements, named so a
/// failure says which).
///
///     template <ResumableRange P> void checkpoint(const P& p) { write(p.state()); }
template <class P>
concept ResumableRange = requires(P& p, const P& cp, const sampler_state& state) {
  { cp.state() } -> std::same_as<sampler_state>;
  p.restore(state);
};

/// Reports Determined's `len` (size()) and the chief's epoch length (epoch_length()).
///
///     static_assert(HasDeterminedLength<decltype(sequential(10) | batch(3))>);
template <class P>
concept HasDeterminedLength = requires(const P& cp) {
  { cp.size() } -> std::same_as<std::int64_t>;
  { cp.epoch_length() } -> std::same_as<std::int64_t>;
};

/// Any pipeline built from sequential(n) or from(range) with `|`.
///
///     static_assert(Sampler<decltype(sequential(10) | shuffle(1) | batch(2))>);
template <class P>
concept Sampler = std::ranges::input_range<P> && HasDeterminedLength<P> && ResumableRange<P> && requires {
  { P::is_batched } -> std::convertible_to<bool>;
  { P::is_endless } -> std::convertible_to<bool>;
};

/// A sampler yielding single indices (no batch() stage).
///
///     static_assert(IndexSampler<decltype(sequential(10) | shuffle(1))>);
template <class P>
concept IndexSampler = Sampler<P> && std::same_as<std::ranges::range_value_t<P>, std::int64_t>;

/// A sampler yielding batches, `std::span<const std::int64_t>` (torch's batch_sampler).
///
///     static_assert(BatchSampler<decltype(sequential(10) | batch(2) | repeat())>);
template <class P>
concept BatchSampler = Sampler<P> && std::same_as<std::ranges::range_value_t<P>, std::span<const std::int64_t>>;

}  // namespace samplers
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_CONCEPTS_HPP
