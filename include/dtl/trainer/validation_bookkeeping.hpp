// dtl — what a fit keeps of its validations: the searcher metric (for the run's summary and the
// checkpoint that follows), the checkpoint policy's decision (`best` against this run's or the
// experiment's best), and non-finite values (a diverged searcher metric stops the run; a
// non-finite training metric is warned about once). Not a template: compiled once into libdtl.
#ifndef DTL_TRAINER_VALIDATION_BOOKKEEPING_HPP
#define DTL_TRAINER_VALIDATION_BOOKKEEPING_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/builtin_reducers.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/log/reporter.hpp>
#include <dtl/log/run_summary.hpp>
#include <dtl/trainer/fit_options.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

class ValidationBookkeeping {
 public:
  /// A fit starts: its options, and no validation yet (what was warned about stays warned).
  void start_fit(const FitOptions& o) {
    metric_ = o.searcher_metric;
    smaller_is_better_ = o.smaller_is_better;
    continue_on_non_finite_ = o.continue_on_non_finite;
    policy_ = o.checkpoint_policy;
    last_.reset();
    non_finite_.reset();
  }

  /// A validation at `batch` reported `metrics`: its searcher metric, when a finite number, goes
  /// to the run's summary and to the checkpoint written at this batch; a non-finite one is held
  /// for check_finite.
  DTL_INLINE void validated(const MetricsJson& metrics, std::int64_t batch, RunSummary& summary);

  /// After the validation's report: a non-finite searcher metric stops the run, naming the last
  /// finite checkpoint (or, under continue_on_non_finite, is warned about once).
  DTL_INLINE void check_finite(std::int64_t batch, const RunSummary& summary, Console& console);

  /// The checkpoint policy; `best` compares with `best_validation` (this run's, updated here), or
  /// with the experiment's best before this validation where the store knows it (a cluster's
  /// master, as Determined).
  [[nodiscard]] DTL_INLINE bool wants_checkpoint(const MetricsJson& metrics,
                                                 const std::optional<std::optional<double>>& experiment_best,
                                                 std::optional<double>& best_validation) const;

  /// The searcher metric a checkpoint records: the latest validation's, if it was at this batch.
  [[nodiscard]] std::optional<double> checkpoint_metric(bool validated_at_this_batch) const {
    return validated_at_this_batch ? last_ : std::nullopt;
  }

  /// A training workload's averages: the first non-finite value of each metric (in the Trainer's
  /// life) is warned about.
  DTL_INLINE void check_training(const MetricsJson& avg, std::int64_t batch, Console& console);

  /// "nan", "inf" or "-inf" for a non-finite value (what a warning names), else the number.
  [[nodiscard]] static DTL_INLINE std::string number_word(double v);

 private:
  std::string metric_;
  bool smaller_is_better_ = true;
  bool continue_on_non_finite_ = false;
  CheckpointPolicy policy_ = CheckpointPolicy::best;
  std::optional<double> last_;        // of the latest validation, if it reported a finite one
  std::optional<double> non_finite_;  // of the latest validation, if it was not finite
  std::set<std::string> warned_;      // metrics already warned about
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/trainer/validation_bookkeeping-inl.hpp>
#endif

#endif  // DTL_TRAINER_VALIDATION_BOOKKEEPING_HPP
