// dtl — the non-template definitions of <dtl/lr/param_group_keys.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LR_PARAM_GROUP_KEYS_INL_HPP
#define DTL_LR_PARAM_GROUP_KEYS_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/param_group_keys.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {
namespace detail {

DTL_INLINE ParamGroupKeyTable& ParamGroupKeyTable::instance() {
  static ParamGroupKeyTable table;
  return table;
}

DTL_INLINE double ParamGroupKeyTable::setdefault(const std::shared_ptr<torch::optim::Optimizer>& opt, std::size_t group,
                                                 std::string_view key, double value) {
  std::lock_guard lock(mu_);
  auto& g = groups_of(opt).at(group);
  auto it = g.find(key);
  if (it == g.end()) it = g.emplace(std::string(key), value).first;
  return it->second;
}

DTL_INLINE void ParamGroupKeyTable::set(const std::shared_ptr<torch::optim::Optimizer>& opt, std::size_t group,
                                        std::string_view key, double value) {
  std::lock_guard lock(mu_);
  groups_of(opt).at(group).insert_or_assign(std::string(key), value);
}

DTL_INLINE std::optional<double> ParamGroupKeyTable::get(const torch::optim::Optimizer& opt, std::size_t group,
                                                         std::string_view key) {
  std::lock_guard lock(mu_);
  const auto* gs = find(opt);
  if (gs == nullptr || group >= gs->size()) return std::nullopt;
  const auto& g = (*gs)[group];
  if (auto it = g.find(key); it != g.end()) return it->second;
  return std::nullopt;
}

DTL_INLINE std::vector<GroupKeys> ParamGroupKeyTable::snapshot(const torch::optim::Optimizer& opt) {
  std::lock_guard lock(mu_);
  const auto* gs = find(opt);
  return gs != nullptr ? *gs : std::vector<GroupKeys>{};
}

DTL_INLINE std::vector<GroupKeys>* ParamGroupKeyTable::find(const torch::optim::Optimizer& opt) {
  auto it = table_.find(&opt);
  if (it == table_.end()) return nullptr;
  if (it->second.owner.expired()) {
    table_.erase(it);
    return nullptr;
  }
  return &it->second.groups;
}

DTL_INLINE std::vector<GroupKeys>& ParamGroupKeyTable::groups_of(const std::shared_ptr<torch::optim::Optimizer>& opt) {
  std::erase_if(table_, [](const auto& e) { return e.second.owner.expired(); });
  auto& e = table_[opt.get()];
  e.owner = opt;
  e.groups.resize(opt->param_groups().size());
  return e.groups;
}

}  // namespace detail
}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_PARAM_GROUP_KEYS_INL_HPP
