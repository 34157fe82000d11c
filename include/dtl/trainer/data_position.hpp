// dtl — where the training data stands: what a checkpoint records of the training stream (its
// loader's description and sampler state), and whether a resume can seek to it or must skip.
#ifndef DTL_TRAINER_DATA_POSITION_HPP
#define DTL_TRAINER_DATA_POSITION_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/data/data_loader.hpp>
#include <dtl/data/raw_loader.hpp>
#include <dtl/log/reporter.hpp>
#include <dtl/samplers/sampler_state_json.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

template <class L>
std::string loader_description(const L& loader, const AdaptOptions& a) {
  if constexpr (AdaptableLoader<L>)
    return loader.describe(a);
  else
    return "";
}

/// The sampler state a resumed checkpoint saved (`saved`: {"loader", "sampler"} or null), when it
/// fits this run's loader; otherwise (another loader, or an older checkpoint) the stream skips
/// `a.skip` batches, which is exact too, and the console says why.
template <class L>
std::optional<samplers::sampler_state> resumable_position(const L& loader, const AdaptOptions& a,
                                                          const nlohmann::json& saved, Console& console) {
  if (a.skip == 0) return std::nullopt;
  if constexpr (RawLoader<L>) {
    console.warn(
        "dataset reproducibility checks are disabled: the training data starts from its beginning "
        "again (batch " +
        std::to_string(a.skip) + " of the run)");
    return std::nullopt;
  } else {
    if (saved.is_null() || !saved.contains("sampler")) return std::nullopt;
    if (saved.value("loader", std::string{}) != loader.describe(a)) {
      console.warn("the training data loader differs from the checkpoint's (" + saved.value("loader", std::string{}) +
                   " vs " + loader.describe(a) + "): skipping " + std::to_string(a.skip) + " batches instead");
      return std::nullopt;
    }
    auto st = saved.at("sampler").template get<samplers::sampler_state>();
    if (st.position != a.skip) {
      console.warn("the checkpoint's data position (batch " + std::to_string(st.position) +
                   ") does not match its batch count: skipping " + std::to_string(a.skip) + " batches instead");
      return std::nullopt;
    }
    return st;
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_DATA_POSITION_HPP
