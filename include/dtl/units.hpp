// dtl — Batch and Epoch: the two units a training length, a period or a schedule is counted in.
#ifndef DTL_UNITS_HPP
#define DTL_UNITS_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/always_false.hpp>
#include <dtl/detail/diagnostics.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

namespace detail {

/// A bare number, which a Length refuses with a diagnostic (a length has a unit).
template <class I>
concept Arithmetic = std::is_arithmetic_v<I>;

/// What Batch and Epoch share. An integer is a *period* (fires when `n % value == 0`, any
/// value < 1 fires every time); a list is a *schedule* (fires when `n` is in it). `Unit` is the
/// derived type, so a Batch and an Epoch never convert into each other.
template <class Unit>
class TrainUnit {
 public:
  constexpr explicit TrainUnit(std::int64_t period) : value_(period) {}
  // A schedule is written with double braces, Batch{{3, 7}}; there is deliberately no
  // initializer_list constructor, which would turn Batch{10} into the schedule {10}.
  explicit TrainUnit(std::vector<std::int64_t> schedule) : value_(0), schedule_(std::move(schedule)) {
    std::ranges::sort(schedule_);
  }

  /// A period that never fires (Determined turns a `None` period into `sys.maxsize`).
  static constexpr Unit never() { return Unit{std::numeric_limits<std::int64_t>::max()}; }

  [[nodiscard]] constexpr bool is_schedule() const noexcept { return value_ == 0 && !schedule_.empty(); }
  [[nodiscard]] constexpr std::int64_t value() const noexcept { return value_; }
  [[nodiscard]] const std::vector<std::int64_t>& schedule() const noexcept { return schedule_; }
  [[nodiscard]] constexpr bool is_never() const noexcept {
    return !is_schedule() && value_ == std::numeric_limits<std::int64_t>::max();
  }

  /// Determined's `should_stop(step_num)`.
  [[nodiscard]] bool should_stop(std::int64_t n) const {
    if (is_schedule()) return std::ranges::binary_search(schedule_, n);
    if (value_ < 1) return true;
    return n % value_ == 0;
  }

  friend bool operator==(const TrainUnit&, const TrainUnit&) = default;

 private:
  std::int64_t value_;
  std::vector<std::int64_t> schedule_;
};

/// Records become batches as in Determined: `max(records // global_batch_size, 1)`. The one place
/// this rule is written (a length in records, records_per_epoch).
[[nodiscard]] constexpr std::int64_t batches_of_records(std::int64_t records, std::int64_t global_batch_size) {
  return std::max<std::int64_t>(records / global_batch_size, 1);
}

}  // namespace detail

/// A number of batches (global steps), or a schedule of batch counts.
///   fit({.max_length = dtl::Batch{1000}, .validation_period = dtl::Batch{{100, 500}}})
struct Batch : detail::TrainUnit<Batch> {
  using TrainUnit::TrainUnit;
  static constexpr const char* name = "batches";
};

/// A number of epochs, or a schedule of epoch counts. An epoch is the chief's length of the
/// training data loader, as in Determined.
struct Epoch : detail::TrainUnit<Epoch> {
  using TrainUnit::TrainUnit;
  static constexpr const char* name = "epochs";
};

template <class T>
concept TrainUnitType = std::same_as<T, Batch> || std::same_as<T, Epoch>;

/// A length or period in either unit: what `fit` takes for max_length and the periods.
/// A bare integer is refused at compile time: `100` could mean batches or epochs.
class Length {
 public:
  Length(Batch b) : unit_(std::move(b)) {}  // NOLINT(google-explicit-constructor): the point is implicit use
  Length(Epoch e) : unit_(std::move(e)) {}  // NOLINT(google-explicit-constructor)
  template <detail::Arithmetic I>
  Length(I) : Length(Batch{1}) {  // NOLINT(google-explicit-constructor); delegating keeps this the first error
    static_assert(detail::always_false<I>, DTL_DIAG_LENGTH_BARE_NUMBER);
  }

  [[nodiscard]] bool is_batches() const noexcept { return std::holds_alternative<Batch>(unit_); }
  [[nodiscard]] bool is_epochs() const noexcept { return std::holds_alternative<Epoch>(unit_); }
  [[nodiscard]] const Batch& batches() const { return std::get<Batch>(unit_); }
  [[nodiscard]] const Epoch& epochs() const { return std::get<Epoch>(unit_); }
  [[nodiscard]] std::int64_t value() const {
    return std::visit([](const auto& u) { return u.value(); }, unit_);
  }
  [[nodiscard]] bool is_schedule() const {
    return std::visit([](const auto& u) { return u.is_schedule(); }, unit_);
  }
  [[nodiscard]] bool is_never() const {
    return std::visit([](const auto& u) { return u.is_never(); }, unit_);
  }
  [[nodiscard]] std::string to_string() const {
    return std::visit([](const auto& u) { return std::string(std::remove_cvref_t<decltype(u)>::name) + "=" +
                                                 std::to_string(u.value()); },
                      unit_);
  }

  /// Does a boundary in this unit fire after a batch? `batch_count` is batches trained so far,
  /// `epoch_count` epochs completed; an epoch unit only fires on the last batch of an epoch.
  [[nodiscard]] bool fires(std::int64_t batch_count, std::int64_t epoch_count, bool epoch_ended) const {
    if (is_batches()) return batches().should_stop(batch_count);
    return epoch_ended && epochs().should_stop(epoch_count);
  }

 private:
  std::variant<Batch, Epoch> unit_;
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_UNITS_HPP
