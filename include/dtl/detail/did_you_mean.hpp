// dtl — "did you mean …?" suggestions for misspelt flags, config keys and hyperparameter names.
#ifndef DTL_DETAIL_DID_YOU_MEAN_HPP
#define DTL_DETAIL_DID_YOU_MEAN_HPP

#include <dtl/detail/abi.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), ignoring ASCII
/// case: `--max-lenght` is one edit from `--max-length`, `--Seed` none from `--seed`.
///
///     edit_distance("seracher", "searcher") == 1
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  // Three rows suffice: the transposition rule looks back two rows.
  std::vector<std::size_t> before(m + 1), previous(m + 1), current(m + 1);
  for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const bool same = lower(a[i - 1]) == lower(b[j - 1]);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[m];
}

/// The candidate closest to `word`, if one is close enough to be a plausible typo: at most a
/// third of the word's length in edits (at least 1, at most 3), so short names are not matched
/// to unrelated short names. Ties go to the earlier candidate.
///
///     closest_match("epoch", std::vector<std::string>{"batches", "epochs"}) == "epochs"
template <class R>
concept StringViewRange =
    std::ranges::input_range<R> && std::convertible_to<std::ranges::range_reference_t<R>, std::string_view>;

template <StringViewRange Candidates>
std::optional<std::string> closest_match(std::string_view word, Candidates&& candidates) {
  const std::size_t limit = std::clamp<std::size_t>(word.size() / 3, 1, 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (auto&& candidate : candidates) {
    const std::string_view c = candidate;
    if (c == word) continue;  // an exact match is never a "did you mean"
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  return best;
}

/// `" (did you mean 'x'?)"` when a close candidate exists, else an empty string, so callers can
/// splice it into one error line unconditionally.
///
///     "unknown flag '--sed'" + did_you_mean("--sed", flags) + "; see --help"
template <StringViewRange Candidates>
std::string did_you_mean(std::string_view word, Candidates&& candidates) {
  auto match = closest_match(word, std::forward<Candidates>(candidates));
  return match ? " (did you mean '" + *match + "'?)" : std::string();
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_DID_YOU_MEAN_HPP
