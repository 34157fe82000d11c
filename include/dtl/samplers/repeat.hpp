// dtl — repeat(): Determined's RepeatSampler / RepeatBatchSampler.
#ifndef DTL_SAMPLERS_REPEAT_HPP
#define DTL_SAMPLERS_REPEAT_HPP

#include <dtl/detail/abi.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <dtl/samplers/node.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
template <SamplerNode U>
class repeat_node;
}  // namespace detail

namespace samplers {

/// The repeat() stage as written in a pipeline; see repeat().
struct repeat_stage {
  /// The node this stage becomes in a pipeline.
  template <class U>
  using node = detail::repeat_node<U>;
};

/// Loops over the stages before it forever; each loop is one epoch (a new shuffle). Its size() is
/// the length of one loop, as Determined's `len(RepeatSampler(s)) == len(s)`. Training pipelines
/// repeat, validation pipelines do not. Where Determined spins forever on an empty sampler, dtl
/// throws dtl::DataError when iteration starts.
///
///     auto p = sequential(10) | batch(3) | repeat();   // [0 1 2] [3 4 5] [6 7 8] [9] [0 1 2] ...
constexpr repeat_stage repeat() noexcept { return {}; }

}  // namespace samplers

namespace detail {

template <SamplerNode U>
class repeat_node : public stage_base<U, U::traits.with_repeat()> {
  using repeat_node::stage_base::inner_;

 public:
  repeat_node(U inner, samplers::repeat_stage /*stage*/) : repeat_node::stage_base(std::move(inner)) {}

  [[nodiscard]] std::int64_t position() const noexcept { return pos_; }

  void start() {
    require_items();
    begin_epoch();
    pos_ = 0;
  }

  bool next(typename U::value_type& out) {
    if (!inner_.next(out)) {
      begin_epoch();
      if (!inner_.next(out)) throw_empty();  // a source whose size() promised items it lacks
    }
    ++pos_;
    return true;
  }

  std::int64_t next_n(std::int64_t* out, std::int64_t k)
    requires(!U::batched)
  {
    std::int64_t got = inner_.next_n(out, k);
    while (got < k) {
      begin_epoch();
      const std::int64_t more = inner_.next_n(out + got, k - got);
      if (more == 0) throw_empty();
      got += more;
    }
    pos_ += k;
    return k;
  }

  // Whole epochs are skipped with skip_pass() (random draws only, nothing materialised); only the
  // epoch the jump lands in is generated. An exactly finished epoch is left finished, not followed
  // by a generated next one, so skipping and reading leave the same state.
  std::int64_t advance(std::int64_t k) {
    const std::int64_t epoch_len = inner_.size();
    const std::int64_t left_in_epoch = epoch_len - inner_.position();
    if (k <= left_in_epoch) {
      inner_.advance(k);
    } else {
      const std::int64_t rest = k - left_in_epoch;   // > 0 items from later epochs
      const std::int64_t whole = (rest - 1) / epoch_len;  // epochs passed over entirely
      for (std::int64_t e = 0; e < whole; ++e) {
        inner_.skip_pass();
        ++epoch_;
      }
      begin_epoch();
      inner_.advance(rest - whole * epoch_len);
    }
    pos_ = saturating_add(pos_, k);
    return k;
  }

  // The one place a restore differs from a skip: the epoch is regenerated from the saved
  // generators instead of being reached by replaying every earlier epoch's draws.
  void resume(std::int64_t p, const samplers::sampler_state& state) {
    require_items();
    const std::int64_t epoch_len = inner_.size();
    if (state.offset > epoch_len) throw_state_mismatch("its offset is larger than an epoch");
    if (state.offset > p || (p - state.offset) % epoch_len != 0) {
      throw_state_mismatch("its position and offset disagree for this epoch length");
    }
    epoch_ = state.epoch;
    inner_.start();
    if (inner_.advance(state.offset) != state.offset) throw_state_mismatch("its offset is past the epoch's end");
    pos_ = p;
  }

  [[nodiscard]] epoch_point epoch_info() const { return {epoch_, inner_.position()}; }

 private:
  void begin_epoch() {
    inner_.start();
    ++epoch_;
  }
  void require_items() const {
    if (inner_.size() <= 0) throw_empty();
  }
  [[noreturn]] static void throw_empty() {
    throw DataError(
        "dtl: repeat() over an empty sampler would loop forever without yielding anything (Determined's "
        "RepeatSampler hangs here). Check that the training dataset is not empty and that batch(size, "
        "drop_last=true) leaves at least one batch.");
  }

  std::int64_t epoch_ = -1;  // epochs begun since construction, minus one
  std::int64_t pos_ = 0;     // items produced since the pass began (across epochs)
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_REPEAT_HPP
