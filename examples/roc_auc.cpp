// dtl example: a binary classifier whose validation reports ROC AUC over the whole validation
// set — across every rank of a distributed run — with a custom MetricReducer; the learning rate
// drops when validation loss plateaus (Determined's documented ReduceLROnPlateau callback); and
// gradients are aggregated over 2 batches per optimizer step.
//   build/examples/roc_auc --run-dir runs/auc
//   torchrun --nproc_per_node 2 --redirects 9:1 --tee 9:1 --no_python build/examples/roc_auc --run-dir runs/auc2
#include <dtl/callbacks.hpp>
#include <dtl/trainer.hpp>

#include <algorithm>
#include <numeric>

namespace {

/// ROC AUC from every rank's (score, label) pairs: each rank keeps its own, the chief's
/// cross_slot_reduce sees all of them (Determined's MetricReducer contract).
class RocAucReducer {
 public:
  struct Slot {
    std::vector<double> scores;
    std::vector<int> labels;
  };
  void reset() { slot_ = {}; }
  void update(const torch::Tensor& scores, const torch::Tensor& labels) {
    const auto s = scores.detach().to(torch::kCPU, torch::kDouble).contiguous();
    const auto l = labels.to(torch::kCPU, torch::kInt).contiguous();
    slot_.scores.insert(slot_.scores.end(), s.data_ptr<double>(), s.data_ptr<double>() + s.numel());
    slot_.labels.insert(slot_.labels.end(), l.data_ptr<int>(), l.data_ptr<int>() + l.numel());
  }
  [[nodiscard]] Slot per_slot_reduce() const { return slot_; }
  /// The Mann-Whitney form: the share of (positive, negative) pairs ranked correctly, ties half.
  [[nodiscard]] double cross_slot_reduce(const std::vector<Slot>& slots) const {
    std::vector<std::pair<double, int>> all;
    for (const auto& s : slots)
      for (std::size_t i = 0; i < s.scores.size(); ++i) all.emplace_back(s.scores[i], s.labels[i]);
    std::sort(all.begin(), all.end());
    double rank_sum = 0, positives = 0;
    for (std::size_t i = 0; i < all.size();) {
      std::size_t j = i;
      while (j < all.size() && all[j].first == all[i].first) ++j;
      const double mid_rank = (static_cast<double>(i + j) + 1) / 2;  // 1-based ranks, ties averaged
      for (std::size_t k = i; k < j; ++k)
        if (all[k].second == 1) rank_sum += mid_rank, ++positives;
      i = j;
    }
    const double negatives = static_cast<double>(all.size()) - positives;
    if (positives == 0 || negatives == 0) return 0.5;
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
  }

 private:
  Slot slot_;
};

}  // namespace

// The slot crosses ranks as JSON.
namespace nlohmann {
template <>
struct adl_serializer<RocAucReducer::Slot> {
  static void to_json(json& j, const RocAucReducer::Slot& s) { j = {{"scores", s.scores}, {"labels", s.labels}}; }
  static void from_json(const json& j, RocAucReducer::Slot& s) {
    j.at("scores").get_to(s.scores);
    j.at("labels").get_to(s.labels);
  }
};
}  // namespace nlohmann

class AucTrial : public dtl::PyTorchTrial<AucTrial> {
 public:
  using Batch = std::tuple<torch::Tensor, torch::Tensor>;

  explicit AucTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    torch::nn::Sequential net;
    net->push_back(torch::nn::Linear(2, 16));
    net->push_back(torch::nn::ReLU());
    net->push_back(torch::nn::Linear(16, 1));
    model_ = ctx.wrap_model(net);
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(ctx.get_hparam<double>("lr")).momentum(0.9)));
    auc_ = ctx.wrap_reducer(RocAucReducer{}, "validation_auc", {.for_training = false});
    // Two overlapping clouds: label 1 around (1, 1), label 0 around (-1, -1).
    auto g = torch::make_generator<torch::CPUGeneratorImpl>(11);
    auto make = [&](std::int64_t n) {
      auto y = torch::randint(0, 2, {n}, g).to(torch::kFloat);
      auto x = (2 * y - 1).unsqueeze(1).expand({n, 2}) + 1.2 * torch::randn({n, 2}, g);
      return dtl::TensorDataset(x.contiguous(), y);
    };
    train_ = std::make_shared<dtl::TensorDataset<2>>(make(2048));
    val_ = std::make_shared<dtl::TensorDataset<2>>(make(512));
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(*train_, {.batch_size = ctx_.get_per_slot_batch_size(), .shuffle = true});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(*val_, {.batch_size = 128}); }
  dtl::Callbacks build_callbacks() {
    return {{"reduce_lr", std::make_shared<dtl::callbacks::ReduceLROnPlateauEveryValidation>(
                              opt_, "validation_loss", dtl::lr::ReduceLROnPlateauOptions{.factor = 0.5, .patience = 1})}};
  }

  dtl::Metrics train_batch(Batch& batch, std::int64_t, std::int64_t) {
    auto& [x, y] = batch;
    auto loss = torch::binary_cross_entropy_with_logits(model_->forward(x).squeeze(1), y);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);  // steps every 2nd batch (aggregation_frequency = 2)
    return {{"loss", loss}, {"lr", opt_->param_groups()[0].options().get_lr()}};
  }
  dtl::Metrics evaluate_batch(Batch& batch) {
    auto& [x, y] = batch;
    auto logits = model_->forward(x).squeeze(1);
    auc_->update(torch::sigmoid(logits), y);
    return {{"validation_loss", torch::binary_cross_entropy_with_logits(logits, y)}};
  }

 private:
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Sequential model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  std::shared_ptr<RocAucReducer> auc_;
  std::shared_ptr<dtl::TensorDataset<2>> train_, val_;
};

#ifndef DTL_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
  torch::set_num_threads(1);
  auto ctx = dtl::init(argc, argv,
                       {.hparams = {{"lr", 0.05}, {"global_batch_size", 32}}, .aggregation_frequency = 2, .seed = 7});
  AucTrial trial(ctx);
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Epoch{3},
                                .validation_period = dtl::Batch{32},
                                .reporting_period = dtl::Batch{32},
                                .searcher_metric = "validation_auc",
                                .smaller_is_better = false});
  return 0;
}
#endif
