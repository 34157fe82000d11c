// dtl — sampler_state <-> JSON, for checkpoints (trial_state.json). Kept apart from
// sampler_state.hpp so the samplers themselves do not depend on a JSON library.
#ifndef DTL_SAMPLERS_SAMPLER_STATE_JSON_HPP
#define DTL_SAMPLERS_SAMPLER_STATE_JSON_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/samplers/sampler_state.hpp>

#include <nlohmann/json.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace samplers {

/// `{"epoch", "offset", "position", "rngs": [{"key": [624 words], "pos"}]}` — numpy's names for
/// the generator fields, so a state can be checked against `RandomState.get_state()`.
DTL_INLINE void to_json(nlohmann::json& j, const sampler_state& s);

/// The inverse of to_json; a malformed value (a field missing, a key not 624 words, a position
/// past 624) is a dtl::DataError naming the field.
DTL_INLINE void from_json(const nlohmann::json& j, sampler_state& s);

}  // namespace samplers
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/samplers/sampler_state_json-inl.hpp>
#endif

#endif  // DTL_SAMPLERS_SAMPLER_STATE_JSON_HPP
