// Checkpoint I/O: dtl's torch.save-format writer and reader against the floor for the same
// bytes — a plain buffered write + fsync of the tensors' memory, and a plain read of it into
// fresh tensors. A ~100 MB state dict (25 float32 tensors of 1M elements); rounds interleave
// the two and alternate which runs first; medians and their ratio (target: within 1.5x).
// Usage: checkpoint_bench [--dir=DIR] [--rounds=N]. DIR should be on the disk checkpoints go
// to (default: the working directory), not a tmpfs, or fsync measures nothing.
// glibc is told to keep freed memory: otherwise each 4 MB tensor is a fresh mmap whose page
// faults (3/4 of a load's time here) land on whichever side happens to allocate after a trim,
// and the load ratio swings between 0.3x and 2.5x from run to run.
#include <dtl/checkpoint/background_writer.hpp>
#include <dtl/checkpoint/checkpoint.hpp>
#include <dtl/checkpoint/torch_save.hpp>

#include "table_row.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Each measurement starts with no dirty pages left by the previous one (sync is not timed):
// otherwise a save pays for the writeback of whatever was written before it.
double seconds_of(const std::function<void()>& f) {
  ::sync();
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The floor: the tensors' bytes through a buffered FILE*, then fsync.
void plain_write(const std::vector<at::Tensor>& tensors, const fs::path& file, bool sync = true) {
  FILE* f = std::fopen(file.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot create " + file.string());
  for (const auto& t : tensors) std::fwrite(t.data_ptr(), 1, t.nbytes(), f);
  std::fflush(f);
  if (sync) ::fsync(::fileno(f));
  std::fclose(f);
}

// The floor for loading: read the bytes back into newly allocated tensors.
std::vector<at::Tensor> plain_read(const fs::path& file, std::size_t count, std::int64_t numel) {
  FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + file.string());
  std::vector<at::Tensor> out;
  for (std::size_t i = 0; i < count; ++i) {
    auto t = at::empty({numel}, at::kFloat);
    if (std::fread(t.data_ptr(), 1, t.nbytes(), f) != t.nbytes()) throw std::runtime_error("short read");
    out.push_back(t);
  }
  std::fclose(f);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  fs::path dir = fs::current_path();
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--dir=", 0) == 0) dir = a.substr(6);
    if (a.rfind("--rounds=", 0) == 0) rounds = std::max(1, std::stoi(a.substr(9)));
  }
  dir /= ".checkpoint-bench-tmp";
  fs::create_directories(dir);

  constexpr std::size_t kTensors = 25;
  constexpr std::int64_t kNumel = 1 << 20;
  torch::manual_seed(0);
  c10::impl::GenericDict sd(c10::StringType::get(), c10::AnyType::get());
  std::vector<at::Tensor> tensors;
  for (std::size_t i = 0; i < kTensors; ++i) {
    tensors.push_back(torch::randn({kNumel}));
    sd.insert("layer" + std::to_string(i) + ".weight", tensors.back());
  }
  const double mb = static_cast<double>(kTensors * kNumel * sizeof(float)) / 1e6;
  const auto dtl_file = dir / "state_dict.pth";
  const auto plain_file = dir / "plain.bin";

  std::vector<double> save_dtl, save_plain, save_nosync, plain_nosync, load_dtl, load_plain, encode;
  for (int r = 0; r < rounds; ++r) {
    const auto a = [&] {
      save_dtl.push_back(seconds_of([&] { dtl::detail::save_pickle_archive(sd, dtl_file, true); }));
    };
    const auto b = [&] { save_plain.push_back(seconds_of([&] { plain_write(tensors, plain_file); })); };
    r % 2 ? (b(), a()) : (a(), b());
    const auto c = [&] { load_dtl.push_back(seconds_of([&] { (void)dtl::detail::load_pickle_archive(dtl_file); })); };
    const auto d = [&] { load_plain.push_back(seconds_of([&] { (void)plain_read(plain_file, kTensors, kNumel); })); };
    r % 2 ? (d(), c()) : (c(), d());
    // Where the time goes: the writer without fsync, and the pickling alone.
    save_nosync.push_back(seconds_of([&] { dtl::detail::save_pickle_archive(sd, dtl_file, false); }));
    plain_nosync.push_back(seconds_of([&] { plain_write(tensors, plain_file, false); }));
    encode.push_back(seconds_of([&] {
      const auto p = dtl::detail::to_pickle_value(sd);
      (void)dtl::detail::pickle::dump(p.value);
    }));
  }
  // Sanity: what dtl wrote reads back equal.
  const auto back = dtl::detail::load_pickle_archive(dtl_file).toGenericDict();
  for (std::size_t i = 0; i < kTensors; ++i)
    if (!torch::equal(back.at("layer" + std::to_string(i) + ".weight").toTensor(), tensors[i]))
      throw std::runtime_error("round trip mismatch");
  const auto file_mb = static_cast<double>(fs::file_size(dtl_file)) / 1e6;
  fs::remove_all(dir);

  const auto line = [&](const char* what, const std::vector<double>& v) {
    const double s = median(v);
    std::printf("  %-34s %8.1f ms  %7.0f MB/s\n", what, s * 1e3, mb / s);
  };
  std::printf("checkpoint_bench: %zu tensors x %lld float32 = %.1f MB (file %.1f MB), %d rounds, medians, in %s\n",
              kTensors, static_cast<long long>(kNumel), mb, file_mb, rounds, dir.parent_path().c_str());
  line("save_pickle_archive + fsync", save_dtl);
  line("plain buffered write + fsync", save_plain);
  std::printf("  %-34s %8.2fx\n", "save ratio (dtl / plain)", median(save_dtl) / median(save_plain));
  line("save_pickle_archive, no fsync", save_nosync);
  line("plain buffered write, no fsync", plain_nosync);
  line("to_pickle_value + dump only", encode);
  line("load_pickle_archive", load_dtl);
  line("plain read into tensors", load_plain);
  std::printf("  %-34s %8.2fx\n", "load ratio (dtl / plain)", median(load_dtl) / median(load_plain));
  bench::table_row("Checkpoint load (CRC-checked) vs plain read, 105 MB", bench::fmt(median(load_dtl) * 1e3, "ms", 1),
                   bench::fmt(median(load_plain) * 1e3, "ms", 1), median(load_dtl) / median(load_plain));

  // A whole checkpoint (Checkpointer::save: state_dict.pth, trial_state.json, load_data.json,
  // metadata.json, the `latest` pointer, crash-safe) against a plain write + fsync of the same
  // tensor bytes: the big state above, and a small one where the syncs are most of the cost.
  for (const std::int64_t numel : {kNumel, std::int64_t{4096}}) {
    auto module = std::make_shared<torch::nn::Module>();
    std::vector<at::Tensor> params;
    for (std::size_t i = 0; i < kTensors; ++i)
      params.push_back(module->register_parameter("w" + std::to_string(i), torch::randn({numel})));
    dtl::detail::TrialStateRefs trial;
    trial.models = {module};
    trial.optimizers = {std::make_shared<torch::optim::SGD>(params, 0.1)};
    trial.hparams = {{"lr", 0.1}};
    const auto storage = dir / "checkpoints";
    fs::create_directories(dir);
    std::vector<double> full, plain;
    dtl::detail::Checkpointer ck(storage);
    std::int64_t step = 0;
    for (int r = 0; r < rounds; ++r) {
      const auto a = [&] {
        full.push_back(seconds_of([&] { ck.save(trial, {{.batches_trained = ++step}}); }));
      };
      const auto b = [&] { plain.push_back(seconds_of([&] { plain_write(params, dir / "plain.bin"); })); };
      r % 2 ? (b(), a()) : (a(), b());
      ck.collect_garbage({.latest = 1});
    }
    // Written in the background (the Trainer's default): what the training thread pays — the
    // state dict built and copied, the write handed to its thread — against the copy alone and
    // against the synchronous save above.
    std::vector<double> pause, copy_only;
    {
      dtl::detail::BackgroundWriter<dtl::detail::WrittenCheckpoint> bg;
      for (int r = 0; r < rounds; ++r) {
        pause.push_back(seconds_of([&] {
          auto snap = std::make_shared<dtl::detail::CheckpointSnapshot>(ck.snapshot(trial, {{.batches_trained = ++step}}));
          bg.start([&ck, snap] { return ck.write(*snap); });
        }));
        (void)bg.wait();
        ck.collect_garbage({.latest = 1});
        const c10::IValue sd = dtl::state_dict(*module);
        copy_only.push_back(seconds_of([&] { (void)dtl::detail::snapshot_tensors(sd); }));
      }
    }
    fs::remove_all(dir);
    const double bytes_mb = static_cast<double>(kTensors * static_cast<std::size_t>(numel) * sizeof(float)) / 1e6;
    std::printf("  full checkpoint, %6.2f MB of tensors: Checkpointer::save %8.2f ms, plain write + fsync %8.2f ms: %5.2fx\n",
                bytes_mb, median(full) * 1e3, median(plain) * 1e3, median(full) / median(plain));
    const double ratio = median(full) / median(plain);
    bench::table_row("Checkpoint save (crash-safe, whole checkpoint) vs plain write + fsync, " +
                         bench::fmt(bytes_mb, "MB", bytes_mb < 1 ? 2 : 0),
                     bench::fmt(median(full) * 1e3, "ms"), bench::fmt(median(plain) * 1e3, "ms"), ratio,
                     {"<= 1.5", ratio <= 1.5});
    std::printf("  in the background: training pauses %8.3f ms (copying the tensors alone: %8.3f ms; synchronous save %8.2f ms)\n",
                median(pause) * 1e3, median(copy_only) * 1e3, median(full) * 1e3);
    const std::string size = bench::fmt(bytes_mb, "MB", bytes_mb < 1 ? 2 : 0);
    bench::table_row("Checkpoint in the background: training pause vs a synchronous save, " + size,
                     bench::fmt(median(pause) * 1e3, "ms", 3), bench::fmt(median(full) * 1e3, "ms"),
                     median(pause) / median(full));
    bench::table_row("Checkpoint in the background: training pause vs copying the tensors alone, " + size,
                     bench::fmt(median(pause) * 1e3, "ms", 3), bench::fmt(median(copy_only) * 1e3, "ms", 3),
                     median(pause) / median(copy_only));
  }
  return 0;
}
