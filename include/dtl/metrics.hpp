// dtl — Metrics: what train_batch / evaluate_batch return. Tensors stay where they were computed
// (no host sync per batch); they are brought to the host once per reported workload.
#ifndef DTL_METRICS_HPP
#define DTL_METRICS_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

/// One metric value: a tensor (any shape, any device) or a plain number.
class MetricValue {
 public:
  MetricValue(torch::Tensor t) : tensor_(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  MetricValue(double v) : number_(v) {}                     // NOLINT(google-explicit-constructor)
  MetricValue(float v) : number_(v) {}                      // NOLINT(google-explicit-constructor)
  MetricValue(int v) : number_(v) {}                        // NOLINT(google-explicit-constructor)
  MetricValue(std::int64_t v) : number_(static_cast<double>(v)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool is_tensor() const noexcept { return tensor_.defined(); }
  [[nodiscard]] const torch::Tensor& tensor() const noexcept { return tensor_; }
  [[nodiscard]] double number() const noexcept { return number_; }
  /// As a detached tensor (numbers become 0-d double tensors): the form reducers stack.
  [[nodiscard]] torch::Tensor as_tensor() const {
    return is_tensor() ? tensor_.detach() : torch::scalar_tensor(number_, torch::kDouble);
  }

 private:
  torch::Tensor tensor_;
  double number_ = 0.0;
};

/// Named metrics in insertion order, as Determined's metric dicts.
///   return dtl::Metrics{{"loss", loss}, {"accuracy", acc}};
class Metrics {
 public:
  using value_type = std::pair<std::string, MetricValue>;

  Metrics() = default;
  Metrics(std::initializer_list<value_type> items) : items_(items) {}
  /// A bare loss tensor means `{"loss": t}`, as in Determined.
  Metrics(torch::Tensor loss) { items_.emplace_back("loss", std::move(loss)); }  // NOLINT

  void set(std::string_view name, MetricValue v) {
    for (auto& [k, old] : items_)
      if (k == name) {
        old = std::move(v);
        return;
      }
    items_.emplace_back(std::string(name), std::move(v));
  }
  [[nodiscard]] const MetricValue* find(std::string_view name) const noexcept {
    for (const auto& [k, v] : items_)
      if (k == name) return &v;
    return nullptr;
  }
  [[nodiscard]] const MetricValue& at(std::string_view name) const {
    if (const auto* v = find(name)) return *v;
    throw std::out_of_range("dtl: no metric named '" + std::string(name) + "'");
  }
  [[nodiscard]] bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }
  [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
  [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
  [[nodiscard]] auto begin() const noexcept { return items_.begin(); }
  [[nodiscard]] auto end() const noexcept { return items_.end(); }

 private:
  std::vector<value_type> items_;
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_METRICS_HPP
