// dtl — where a sampler pipeline is, as plain data a checkpoint can hold.
#ifndef DTL_SAMPLERS_SAMPLER_STATE_HPP
#define DTL_SAMPLERS_SAMPLER_STATE_HPP

#include <dtl/detail/abi.hpp>

#include <cstdint>
#include <vector>

#include <dtl/samplers/numpy_random.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace samplers {

/// Resume point of a sampler pipeline: `pipeline.state()` returns it, `pipeline.restore(state)`
/// continues from it, and every member is a public number so a checkpoint writer can store it
/// (e.g. as JSON) without knowing the pipeline's type.
///
/// The *epoch stage* is the stage directly under `repeat()`, or the whole pipeline when there is
/// no `repeat()`. One epoch is one pass over it; every `shuffle()` draws one permutation per epoch.
///
///     auto p = sequential(10) | shuffle(7) | batch(2) | repeat() | shard(rank, world);
///     for (auto b : p) { train(b); if (done) { save(p.state()); break; } }
///     auto q = sequential(10) | shuffle(7) | batch(2) | repeat() | shard(rank, world);
///     q.restore(load());            // q's next item is the one after b
///
/// The state describes the position just after the item the live iterator points at (the item
/// the loop body is working on).
struct sampler_state {
  /// Epochs begun before the current one, counted since the pipeline was constructed. It selects
  /// which permutation `rngs` regenerates; it is not reset by a second begin().
  std::int64_t epoch = 0;
  /// Items of the epoch stage (its own unit: batches when batch() comes before repeat(), indices
  /// otherwise) already read in the current epoch, 0..len(epoch stage). Without repeat() it equals
  /// `position`.
  std::int64_t offset = 0;
  /// Items the pipeline has produced since its pass began, counting those a skip() discarded, in
  /// the pipeline's own unit (batches for a batched pipeline). For Determined's training chain this
  /// is the number of batches trained, i.e. what Determined would pass as the skip.
  std::int64_t position = 0;
  /// Each shuffle() stage's generator as it was at the start of epoch `epoch`, innermost (closest
  /// to the source) first. `shuffle(seed, false)` contributes its unused generator too, so the
  /// count depends only on the pipeline's type.
  std::vector<mt19937_state> rngs;

  friend bool operator==(const sampler_state&, const sampler_state&) = default;
};

}  // namespace samplers
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_SAMPLER_STATE_HPP
