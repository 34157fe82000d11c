// dtl — the non-template definitions of <dtl/log/run_summary.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LOG_RUN_SUMMARY_INL_HPP
#define DTL_LOG_RUN_SUMMARY_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/log/run_summary.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE std::vector<std::string> RunSummary::lines(std::int64_t batches, std::int64_t epochs,
                                             const std::filesystem::path& run_dir, bool resume_latest) const {
  std::vector<std::string> out;
  const double secs = std::chrono::duration<double>(Clock::now() - start_).count();
  const auto trained = batches - first_batch_;
  std::string line = "finished: " + std::to_string(batches) + " batches (" + std::to_string(epochs) +
                     " epochs); this run trained " + std::to_string(trained) + " in " +
                     fixed(secs, secs < 10 ? 2 : 1) + " s";
  if (secs > 0 && trained > 0) line += ", " + fixed(static_cast<double>(trained) / secs, 1) + " batches/s";
  out.push_back(std::move(line));
  if (last_)
    out.push_back(metric_ + ": best " + num(best_->first) + " at batch " + std::to_string(best_->second) + ", last " +
                  num(last_->first) + " at batch " + std::to_string(last_->second));
  if (latest_checkpoint_)
    out.push_back("checkpoints: latest " + latest_checkpoint_->first + " (batch " +
                  std::to_string(latest_checkpoint_->second) + ")" +
                  (best_checkpoint_ ? "; best " + best_checkpoint_->first + " (batch " +
                                          std::to_string(best_checkpoint_->second) + ")"
                                    : std::string()));
  const auto run = run_dir.string();
  out.push_back("look further: dtl-plot " + run + "/metrics.jsonl -o " + run + "/metrics.html; tensorboard --logdir " +
                run + "/tensorboard" +
                (resume_latest ? "; continue with --run-dir " + run + " --resume latest"
                               : "; the master resumes the trial from its latest registered checkpoint"));
  return out;
}
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LOG_RUN_SUMMARY_INL_HPP
