// dtl — the non-template definitions of <dtl/samplers/sampler_state_json.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_SAMPLERS_SAMPLER_STATE_JSON_INL_HPP
#define DTL_SAMPLERS_SAMPLER_STATE_JSON_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/errors.hpp>
#include <dtl/samplers/sampler_state_json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {
namespace samplers {

DTL_INLINE void to_json(nlohmann::json& j, const sampler_state& s) {
  nlohmann::json rngs = nlohmann::json::array();
  for (const auto& r : s.rngs) rngs.push_back({{"key", r.key}, {"pos", r.pos}});
  j = {{"epoch", s.epoch}, {"offset", s.offset}, {"position", s.position}, {"rngs", std::move(rngs)}};
}

DTL_INLINE void from_json(const nlohmann::json& j, sampler_state& s) {
  try {
    s.epoch = j.at("epoch").get<std::int64_t>();
    s.offset = j.at("offset").get<std::int64_t>();
    s.position = j.at("position").get<std::int64_t>();
    s.rngs.clear();
    for (const auto& r : j.at("rngs")) {
      mt19937_state m;
      const auto& key = r.at("key");
      if (!key.is_array() || key.size() != m.key.size())
        throw DataError("dtl: sampler state: an rng key must hold " + std::to_string(m.key.size()) + " words");
      for (std::size_t i = 0; i < m.key.size(); ++i) m.key[i] = key[i].get<std::uint32_t>();
      m.pos = r.at("pos").get<std::uint32_t>();
      if (m.pos > m.key.size()) throw DataError("dtl: sampler state: rng pos " + std::to_string(m.pos) + " > 624");
      s.rngs.push_back(m);
    }
  } catch (const nlohmann::json::exception& e) {
    throw DataError(std::string("dtl: sampler state is malformed: ") + e.what());
  }
}

}  // namespace samplers
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_SAMPLER_STATE_JSON_INL_HPP
