// dtl — the keys Python's LR schedulers keep in an optimizer's param_groups ('initial_lr',
// OneCycleLR's 'max_lr', 'min_lr', 'max_momentum', 'base_momentum', and SWALR's 'swa_lr').
// LibTorch's OptimizerOptions cannot hold extra keys, so they live here, per optimizer and group.
// They are shared state, as in Python: a second scheduler on the same optimizer (SequentialLR,
// ChainedScheduler) reads the 'initial_lr' the first one set, and checkpoints save them inside
// the optimizer's param_groups, where Python's schedulers look for them after a load.
#ifndef DTL_LR_PARAM_GROUP_KEYS_HPP
#define DTL_LR_PARAM_GROUP_KEYS_HPP

#include <torch/torch.h>

#include <dtl/detail/abi.hpp>

#include <dtl/detail/compiled_lib.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {
namespace detail {

/// One group's keys, name → value.
using GroupKeys = std::map<std::string, double, std::less<>>;

/// The keys a scheduler may add to a group: OneCycleLR's in the order Python adds them (its
/// phases index them, so new keys go at the end), then SWALR's.
inline constexpr const char* kSchedulerGroupKeys[] = {"initial_lr",   "max_lr",        "min_lr",
                                                      "max_momentum", "base_momentum", "swa_lr"};

/// Keyed by the optimizer's address; the weak_ptr tells a live optimizer from a dead one whose
/// address was reused, so a new optimizer never inherits an old one's keys.
class ParamGroupKeyTable {
 public:
  DTL_INLINE static ParamGroupKeyTable& instance();

  /// Python's `group.setdefault(key, value)`; returns the value in effect.
  DTL_INLINE double setdefault(const std::shared_ptr<torch::optim::Optimizer>& opt, std::size_t group,
                               std::string_view key, double value);

  DTL_INLINE void set(const std::shared_ptr<torch::optim::Optimizer>& opt, std::size_t group, std::string_view key,
                      double value);

  [[nodiscard]] DTL_INLINE std::optional<double> get(const torch::optim::Optimizer& opt, std::size_t group,
                                                     std::string_view key);

  /// A copy of every group's keys (empty when no scheduler touched this optimizer).
  [[nodiscard]] DTL_INLINE std::vector<GroupKeys> snapshot(const torch::optim::Optimizer& opt);

 private:
  struct Entry {
    std::weak_ptr<torch::optim::Optimizer> owner;
    std::vector<GroupKeys> groups;
  };

  DTL_INLINE std::vector<GroupKeys>* find(const torch::optim::Optimizer& opt);
  DTL_INLINE std::vector<GroupKeys>& groups_of(const std::shared_ptr<torch::optim::Optimizer>& opt);

  std::mutex mu_;
  std::map<const torch::optim::Optimizer*, Entry> table_;
};

inline ParamGroupKeyTable& param_group_keys() { return ParamGroupKeyTable::instance(); }

}  // namespace detail
}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/lr/param_group_keys-inl.hpp>
#endif

#endif  // DTL_LR_PARAM_GROUP_KEYS_HPP
