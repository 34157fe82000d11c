// dtl — the end-of-run summary (chief): how far and how fast the run went, the best and last
// searcher metric, the best and latest checkpoints, and where to look further.
#ifndef DTL_LOG_RUN_SUMMARY_HPP
#define DTL_LOG_RUN_SUMMARY_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/fixed.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

class RunSummary {
 public:
  using Clock = std::chrono::steady_clock;

  RunSummary(std::string searcher_metric, bool smaller_is_better)
      : metric_(std::move(searcher_metric)), smaller_is_better_(smaller_is_better) {}

  /// Training starts (or resumes) at `batch`.
  void start(std::int64_t batch) {
    start_ = Clock::now();
    first_batch_ = batch;
  }
  /// A validation's finite searcher metric at `batch`.
  void validated(double metric, std::int64_t batch) {
    last_ = {metric, batch};
    if (!best_ || (smaller_is_better_ ? metric < best_->first : metric > best_->first)) best_ = last_;
  }
  /// A checkpoint is complete; it is the best one when the best validation was at its batch.
  void checkpointed(const std::string& dir, std::int64_t batch) {
    latest_checkpoint_ = {dir, batch};
    if (best_ && best_->second == batch) best_checkpoint_ = latest_checkpoint_;
  }
  /// The newest complete checkpoint (directory, batch), if any.
  [[nodiscard]] const std::optional<std::pair<std::string, std::int64_t>>& latest_checkpoint() const noexcept {
    return latest_checkpoint_;
  }

  /// The closing lines, for a run at `batches` (`epochs`) whose files are under `run_dir`;
  /// `resume_latest`: whether `--resume latest` continues it (false where a cluster's master
  /// resumes the trial instead).
  [[nodiscard]] DTL_INLINE std::vector<std::string> lines(std::int64_t batches, std::int64_t epochs,
                                               const std::filesystem::path& run_dir,
                                               bool resume_latest = true) const;

 private:
  static std::string num(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  }

  std::string metric_;
  bool smaller_is_better_;
  Clock::time_point start_{};
  std::int64_t first_batch_ = 0;
  std::optional<std::pair<double, std::int64_t>> best_, last_;  // searcher metric and its batch
  std::optional<std::pair<std::string, std::int64_t>> best_checkpoint_, latest_checkpoint_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/log/run_summary-inl.hpp>
#endif

#endif  // DTL_LOG_RUN_SUMMARY_HPP
