// dtl — errors. Every error dtl raises is one of these, each message naming the problem and the fix.
#ifndef DTL_ERRORS_HPP
#define DTL_ERRORS_HPP

#include <dtl/detail/abi.hpp>

#include <stdexcept>
#include <string>

namespace dtl {
inline namespace DTL_ABI {

/// A bad command line, config file or hyperparameter: reported before any work starts.
/// `dtl::init` turns it into one error line on stderr and exit status 2.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The trial breaks Determined's contract in a way the compiler could not see
/// (Determined's InvalidExperimentException).
struct InvalidExperimentException : std::logic_error {
  using std::logic_error::logic_error;
};

/// A context accessor was called when its answer does not exist yet (Determined's
/// InternalException), e.g. `current_train_batch()` before training started.
struct InternalException : std::logic_error {
  using std::logic_error::logic_error;
};

/// Data that cannot be used: an empty dataset or validation shard, a missing data file.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A checkpoint file that cannot be written or read back: missing, truncated, corrupt, or one
/// that would need code to run to load it (a global outside dtl's allow-list; loading never
/// executes anything from a file).
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Training diverged: the searcher metric became NaN or infinite (FitOptions.continue_on_non_finite
/// keeps training instead). The last finite checkpoint stays latest and best.
struct NonFiniteMetricError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A distributed run that cannot go on: a peer that could not be reached, that failed, that was
/// killed or that stopped answering within the timeout. Every rank fails with one of these
/// rather than hang; the message names the failed rank when it could tell.
struct DistributedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Determined's `det.InvalidHP`: throw it from the trial (its constructor, or any method the
/// Trainer calls) when its hyperparameters cannot work, e.g. a layer size the data does not fit.
/// On a Determined cluster the chief reports an early exit (the searcher moves on to other
/// hyperparameters) and a program built on dtl::init(argc, argv) exits 0; elsewhere it is an
/// error like any other (status 1).
struct InvalidHP : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A Determined master that refused a report, or did not answer within the retry budget
/// (DTL_MASTER_RETRY_SECONDS). Checkpoints written before it stay on storage; the message names
/// those the master has not registered.
struct ClusterError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_ERRORS_HPP
