// dtl — FitOptions::cuda_graphs: train_batch (forward, backward, optimizer step, GradScaler,
// metrics) captured once into a CUDA graph and replayed for every batch, as torch.cuda.graphs'
// whole-network capture and torch.compile's "reduce-overhead" do. The first `cuda_graph_warmup`
// batches train eagerly (lazy state — optimizer moments, the scaler's tensors, the learning-rate
// tensors — is created then, outside the graph's memory); the next batch is copied into static
// input buffers and captured on a side stream; each later batch is copied into those buffers,
// the learning rates written to their device tensors where they changed, and the graph
// replayed. A batch of other shapes (the last, partial one) trains eagerly, on the same state.
// What cannot be replayed is refused with one line naming the cause: at fit's start (several
// processes, gradient aggregation, apex, an optimizer whose step is not capturable) or at the
// capture (a host sync inside train_batch, a metric computed on the host), before the batch has
// changed anything on the device. docs/cuda-graphs.md.
#ifndef DTL_TRAINER_CUDA_GRAPH_STEP_HPP
#define DTL_TRAINER_CUDA_GRAPH_STEP_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/torch_compat.hpp>

#include <torch/torch.h>

#ifdef DTL_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <dtl/amp/grad_scaler.hpp>
#include <dtl/builtin_reducers.hpp>
#include <dtl/context.hpp>
#include <dtl/data/batch.hpp>
#include <dtl/errors.hpp>
#include <dtl/metrics.hpp>
#include <dtl/optim/step_control.hpp>
#include <dtl/trainer/fit_options.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// What the graph needs of the run, gathered by prepare_cuda_graphs.
struct CudaGraphSetup {
  torch::Device device = torch::kCPU;
  std::int64_t warmup = 3;
  std::vector<StepControl*> optimizers;  // made capturable
  GradScaler* scaler = nullptr;          // wrap_scaler's, whose fused step count the replays advance
};

/// FitOptions::cuda_graphs at fit's start. Refuses, with one line each, what a replay would get
/// wrong — on every device, so that a CPU run finds them too; on the CPU there are no CUDA graphs
/// and the run stays eager (said once). On CUDA it makes every wrapped optimizer's step
/// capturable and returns the setup.
inline std::optional<CudaGraphSetup> prepare_cuda_graphs(const FitOptions& o, const PyTorchTrialContext& ctx,
                                                         GradScaler* scaler, bool apex,
                                                         const std::function<void(const std::string&)>& note) {
  const std::string head = "dtl: FitOptions::cuda_graphs: ";
  if (o.cuda_graph_warmup < 1)
    throw ConfigError(head + "cuda_graph_warmup is " + std::to_string(o.cuda_graph_warmup) +
                      "; it must be at least 1 (the eager batches that create the optimizer's state before the "
                      "capture; torch's examples use 3)");
  if (ctx.distributed().size > 1)
    throw InvalidExperimentException(
        head + "not supported with " + std::to_string(ctx.distributed().size) +
        " processes yet: dtl's gradient all-reduce runs from the host, per bucket, which a replay would skip; train "
        "on one process with cuda_graphs, or without it on several");
  if (ctx.aggregation_frequency() > 1)
    throw InvalidExperimentException(
        head + "aggregation_frequency is " + std::to_string(ctx.aggregation_frequency()) +
        ": batches that only accumulate and batches that step are different work, and one graph replays one of "
        "them; use aggregation_frequency 1 (a larger batch) or train without cuda_graphs");
  if (apex)
    throw InvalidExperimentException(head + "configure_apex_amp's loss scaling decides on the host whether to step; "
                                            "use wrap_scaler(dtl::GradScaler{}) with autocast instead, or train "
                                            "without cuda_graphs");
  CudaGraphSetup s{.device = ctx.device(), .warmup = o.cuda_graph_warmup, .optimizers = {}, .scaler = scaler};
#if !DTL_TORCH_2  // no capturable steps (nor a CUDA build of dtl) on LibTorch 1.13
  if (ctx.device().is_cuda())
    throw InvalidExperimentException(head + "needs LibTorch 2.x (this is 1.13), whose fused optimizer steps capture");
#else
  std::size_t i = 0;
  for (const auto& opt : ctx.optimizers()) {
    auto* c = dynamic_cast<StepControl*>(opt.get());
    if (!c)
      throw InvalidExperimentException(
          head + "optimizer " + std::to_string(i) + " (" + c10::demangle(typeid(*opt).name()) +
          ") keeps its step count on the host, so a replayed step would repeat the captured one's bias "
          "corrections; use torch::optim::SGD, Adam or AdamW (their capturable fused steps), or train without "
          "cuda_graphs");
    if (c->options().foreach && *c->options().foreach)
      throw InvalidExperimentException(head + "optimizer " + std::to_string(i) +
                                       " was wrapped with foreach = true; a captured step is the fused one "
                                       "(OptimizerOptions::capturable): leave foreach unset");
    s.optimizers.push_back(c);
    ++i;
  }
#endif
  if (!s.device.is_cuda()) {
    note("cuda_graphs: the trial trains on " + s.device.str() +
         ", where there are no CUDA graphs: every batch runs eagerly");
    return std::nullopt;
  }
  for (auto* c : s.optimizers) c->make_capturable();
  return s;
}

/// Marks this thread as capturing while it lives (cuda_graph_capturing()).
struct CaptureFlag {
  CaptureFlag() noexcept { cuda_graph_capturing() = true; }
  ~CaptureFlag() { cuda_graph_capturing() = false; }
  CaptureFlag(const CaptureFlag&) = delete;
  CaptureFlag& operator=(const CaptureFlag&) = delete;
};

#ifdef DTL_WITH_CUDA
/// Makes a pool stream the current one while it lives (c10's CUDAStreamGuard, without the
/// device-guard machinery whose inline code would need libcudart linked into every trial).
class SideStream {
 public:
  explicit SideStream(c10::DeviceIndex device)
      : previous_(c10::cuda::getCurrentCUDAStream(device)), side_(c10::cuda::getStreamFromPool(false, device)) {
    c10::cuda::setCurrentCUDAStream(side_);
  }
  ~SideStream() { c10::cuda::setCurrentCUDAStream(previous_); }
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

 private:
  c10::cuda::CUDAStream previous_, side_;
};
#endif

class CudaGraphStep {
 public:
  CudaGraphStep(CudaGraphSetup s, std::function<void(const std::string&)> note)
      : s_(std::move(s)), note_(std::move(note)) {}
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;
  ~CudaGraphStep() {
#ifdef DTL_WITH_CUDA
    graph_.reset();  // before the static buffers it reads and writes
#endif
  }

  /// Trains one batch `host` (as the loader made it; `call(batch)` runs train_batch and returns
  /// its Metrics), eagerly, by capturing it, or by replaying the graph; its metrics go to
  /// `collector`.
  template <class B, class Call>
  void train(B& host, Call&& call, MetricCollector& collector, std::int64_t batch_idx) {
    if (!captured_) {
      if (eager_batches_ < s_.warmup) {
        ++eager_batches_;
        eager(host, call, collector);
        return;
      }
      capture(host, call, batch_idx);
      replay(collector);
      return;
    }
    incoming_.clear();
    for_each_tensor(host, [&](torch::Tensor& t) { incoming_.push_back(t); });
    if (!same_shapes()) {
      if (!said_eager_) {
        said_eager_ = true;
        note_("cuda_graphs: batch " + std::to_string(batch_idx) +
              " has other shapes than the captured one (a last, partial batch?): it trains eagerly, as will any "
              "such batch");
      }
      eager(host, call, collector);
      return;
    }
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < incoming_.size(); ++i)
      if (incoming_[i].defined())
        static_inputs_[i].copy_(incoming_[i], /*non_blocking=*/incoming_[i].is_pinned());
    replay(collector);
  }

  /// A new workload: its metrics start at the first row of the buffers again.
  void new_workload() noexcept { row_ = 0; }

 private:
  /// One group of 0-d metrics of one dtype: the captured stack of them, and per batch a row
  /// of a buffer it is copied to (views made once per chunk of rows).
  struct Rows {
    torch::ScalarType dtype = torch::kFloat;
    std::vector<torch::Tensor> outputs;  // the captured metrics of this group, in key order
    torch::Tensor stacked;               // the captured stack of them (written by each replay)
    struct Chunk {
      torch::Tensor data;                // [kChunk, n]
      std::vector<torch::Tensor> rows;   // data[r]
      std::vector<torch::Tensor> cells;  // data[r][i], row-major
    };
    std::vector<Chunk> chunks;
  };
  static constexpr std::int64_t kChunk = 128;

  template <class B, class Call>
  void eager(B& host, Call& call, MetricCollector& collector) {
    auto batch = dtl::to_device(std::move(host), s_.device, /*non_blocking=*/true);
    collector.add(call(batch), "training");
  }

  [[nodiscard]] bool same_shapes() const {
    if (incoming_.size() != static_inputs_.size()) return false;
    for (std::size_t i = 0; i < incoming_.size(); ++i) {
      const auto& a = incoming_[i];
      const auto& b = static_inputs_[i];
      if (a.defined() != b.defined()) return false;
      if (a.defined() && (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type())) return false;
    }
    return true;
  }

  std::string failure(const std::string& cause, std::int64_t batch_idx) const {
    const auto line = cause.substr(0, cause.find('\n'));
    return "dtl: FitOptions::cuda_graphs: train_batch could not be captured into a CUDA graph at batch " +
           std::to_string(batch_idx) + ": " + line +
           ". A replay repeats only device work, so train_batch must not wait for the GPU (no .item(), printing a "
           "tensor or reading its value; clip_grad_norm and a GradScaler with min/max scale do), must return its "
           "metrics as CUDA tensors, and must change learning rates only through an LR scheduler; fix that or "
           "train without cuda_graphs. Training stopped before this batch changed anything; earlier checkpoints "
           "are intact";
  }

  template <class B, class Call>
  void capture(B& host, Call& call, std::int64_t batch_idx) {
    if constexpr (!only_tensor_leaves<B>()) {
      (void)host, (void)call;
      throw InvalidExperimentException(
          failure("the batch holds values that are not tensors (a replay would keep the captured batch's)",
                  batch_idx));
    } else {
#ifdef DTL_WITH_CUDA
      // The captured batch: train_batch sees it once; the graph keeps reading its tensors' storage
      // (held by static_inputs_) at every replay.
      auto owned = dtl::to_device(std::move(host), s_.device, /*non_blocking=*/false);
      static_inputs_.clear();
      for_each_tensor(owned, [&](torch::Tensor& t) {
        // Buffers of the graph's own: a batch already on the device may be a view of the loader's
        // data, which the copies into the inputs would otherwise overwrite.
        if (t.defined()) t = t.detach().clone();
        static_inputs_.push_back(t);
      });
      for (auto* o : s_.optimizers) o->refresh_device_lr();  // none is written inside the capture
      const auto device_index = s_.device.has_index() ? s_.device.index() : c10::cuda::current_device();
      c10::cuda::device_synchronize();
      const std::int64_t fused_before = s_.scaler ? s_.scaler->fused_steps_ : 0;
      graph_ = std::make_unique<at::cuda::CUDAGraph>();
      {
        SideStream on_side(device_index);
        CaptureFlag flag;
        graph_->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
        try {
          keep_outputs(call(owned));
          graph_->capture_end();
        } catch (const std::exception& e) {
          try {
            graph_->capture_end();
          } catch (...) {  // the capture was invalidated: what ends it says so again
          }
          graph_.reset();
          throw InvalidExperimentException(failure(e.what(), batch_idx));
        }
      }
      c10::cuda::device_synchronize();
      // The capture counted its fused steps once; each replay (the first one included) adds them.
      fused_per_replay_ = s_.scaler ? s_.scaler->fused_steps_ - fused_before : 0;
      if (s_.scaler) s_.scaler->fused_steps_ -= fused_per_replay_;
      captured_ = true;
#else
      (void)host, (void)call;
      throw std::logic_error(failure("this program was built without CUDA", batch_idx));
#endif
    }
  }

  /// Inside the capture: the metrics train_batch returned, kept as the graph's outputs; 0-d
  /// float32 and float64 ones stacked per dtype (copied out per batch in one copy each).
  void keep_outputs(const Metrics& m) {
    keys_.clear();
    where_.clear();
    others_.clear();
    rows_.clear();
    for (const auto& [k, v] : m) {
      if (!v.is_tensor())
        throw std::runtime_error("metric '" + k +
                                 "' is a host number, which a replay cannot recompute; return it as a tensor");
      auto t = v.tensor().detach();
      if (!t.is_cuda())
        throw std::runtime_error("metric '" + k + "' is a tensor on " + t.device().str() +
                                 ", computed on the host; keep it on the GPU");
      keys_.push_back(k);
      if (t.dim() == 0 && (t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kDouble)) {
        std::size_t g = 0;
        while (g < rows_.size() && rows_[g].dtype != t.scalar_type()) ++g;
        if (g == rows_.size()) rows_.push_back({.dtype = t.scalar_type()});
        where_.emplace_back(static_cast<int>(g), static_cast<int>(rows_[g].outputs.size()));
        rows_[g].outputs.push_back(t);
      } else {
        where_.emplace_back(-1, static_cast<int>(others_.size()));
        others_.push_back(t);
      }
    }
    for (auto& r : rows_) r.stacked = torch::stack(r.outputs);
  }

  void replay(MetricCollector& collector) {
#ifdef DTL_WITH_CUDA
    for (auto* o : s_.optimizers) o->refresh_device_lr();
    graph_->replay();
    if (s_.scaler) s_.scaler->fused_steps_ += fused_per_replay_;
    record(collector);
#else
    (void)collector;
#endif
  }

  /// This batch's metrics, copied out of the graph's outputs (which the next replay overwrites).
  void record(MetricCollector& collector) {
    torch::NoGradGuard no_grad;
    const auto chunk = static_cast<std::size_t>(row_ / kChunk), r = static_cast<std::size_t>(row_ % kChunk);
    for (auto& g : rows_) {
      if (chunk == g.chunks.size()) {
        const auto n = static_cast<std::int64_t>(g.outputs.size());
        Rows::Chunk c{.data = torch::empty({kChunk, n}, g.stacked.options()), .rows = {}, .cells = {}};
        for (std::int64_t i = 0; i < kChunk; ++i) {
          c.rows.push_back(c.data[i]);
          for (std::int64_t j = 0; j < n; ++j) c.cells.push_back(c.data[i][j]);
        }
        g.chunks.push_back(std::move(c));
      }
      g.chunks[chunk].rows[r].copy_(g.stacked, /*non_blocking=*/true);
    }
    values_.clear();
    for (const auto& [g, i] : where_) {
      if (g < 0) {
        values_.push_back(others_[static_cast<std::size_t>(i)].clone());
      } else {
        auto& rows = rows_[static_cast<std::size_t>(g)];
        values_.push_back(rows.chunks[chunk].cells[r * rows.outputs.size() + static_cast<std::size_t>(i)]);
      }
    }
    collector.add_row(keys_, values_, "training");
    ++row_;
  }

  CudaGraphSetup s_;
  std::function<void(const std::string&)> note_;
  std::int64_t eager_batches_ = 0;
  bool captured_ = false;
  bool said_eager_ = false;
  std::vector<torch::Tensor> static_inputs_;  // the captured batch's tensors, in for_each_tensor's order
  std::vector<torch::Tensor> incoming_;       // reused: a new batch's tensors, in the same order
  std::vector<std::string> keys_;             // the metrics' names, in train_batch's order
  std::vector<std::pair<int, int>> where_;    // per metric: (row group, index), or (-1, index in others_)
  std::vector<Rows> rows_;
  std::vector<torch::Tensor> others_;  // metrics that are not 0-d float32/float64: cloned per batch
  std::vector<torch::Tensor> values_;  // reused: one batch's metric values, in key order
  std::int64_t row_ = 0;
  std::int64_t fused_per_replay_ = 0;
#ifdef DTL_WITH_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
#endif
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_CUDA_GRAPH_STEP_HPP
