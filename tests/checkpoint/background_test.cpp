// Checkpoints written off the training thread: the snapshot owns its tensors (training may
// change the live ones at once) and keeps their sharing; the write is collected at the next
// boundary, where its hooks run and its failure is raised; nothing in flight is lost when the
// Trainer goes away on an error; FitOptions.checkpoint_in_background = false is Determined's timing.
#include "../core/test_trials.hpp"

#include <dtl/checkpoint/snapshot.hpp>

#include <fstream>

namespace {

using test::LinearTrial;
using test::Record;
using V = std::vector<std::int64_t>;

/// Records, at each write_end, whether the checkpoint's files are complete; optionally puts an
/// entry that cannot be saved (an undefined tensor) into the checkpoint taken at one batch.
class WriteWatcher : public dtl::PyTorchCallback {
 public:
  explicit WriteWatcher(Record& r, std::optional<std::int64_t> poison_at = std::nullopt) : r_(r), poison_at_(poison_at) {}
  void on_checkpoint_save_start(c10::impl::GenericDict& ckpt) override {
    if (poison_at_ && r_.batches == *poison_at_) ckpt.insert("unsaveable", at::Tensor());
  }
  void on_checkpoint_write_end(const std::filesystem::path& dir) override {
    complete.push_back(std::filesystem::exists(dir / "metadata.json") && std::filesystem::exists(dir / "state_dict.pth"));
  }
  void on_checkpoint_upload_end(const std::string& uuid) override { uploaded.push_back(uuid); }
  std::vector<bool> complete;
  std::vector<std::string> uploaded;

 private:
  Record& r_;
  std::optional<std::int64_t> poison_at_;
};

}  // namespace

TEST_CASE("snapshot_tensors copies every tensor, keeps containers' types and tensors' shared storage") {
  auto w = torch::arange(12, torch::kFloat).reshape({3, 4});
  auto view = w.narrow(0, 1, 2);  // the same storage, offset 4
  c10::impl::GenericDict inner(c10::IntType::get(), c10::AnyType::get());
  inner.insert(0, w);
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(view);
  list.push_back(c10::ivalue::Tuple::create({c10::IValue(w), c10::IValue(std::int64_t{7})}));
  c10::impl::GenericDict root(c10::StringType::get(), c10::AnyType::get());
  root.insert("state", inner);
  root.insert("list", list);
  root.insert("name", std::string("x"));

  const auto snap = dtl::detail::snapshot_tensors(root).toGenericDict();
  w.add_(100);  // training goes on: the live tensors change in place

  const auto sw = snap.at("state").toGenericDict().at(0).toTensor();
  CHECK(snap.at("state").toGenericDict().keyType()->kind() == c10::TypeKind::IntType);
  CHECK(torch::equal(sw, torch::arange(12, torch::kFloat).reshape({3, 4})));
  const auto sl = snap.at("list").toList();
  const auto sview = sl.get(0).toTensor();
  const auto stuple_w = sl.get(1).toTupleRef().elements()[0].toTensor();
  CHECK(sview.storage_offset() == 4);
  CHECK(sview.sizes() == view.sizes());
  // One copy of the storage, shared as the originals shared theirs (torch.save writes one record).
  CHECK(sview.storage().unsafeGetStorageImpl() == sw.storage().unsafeGetStorageImpl());
  CHECK(stuple_w.storage().unsafeGetStorageImpl() == sw.storage().unsafeGetStorageImpl());
  CHECK(sw.storage().unsafeGetStorageImpl() != w.storage().unsafeGetStorageImpl());
  CHECK(torch::equal(sview, torch::arange(4, 12, torch::kFloat).reshape({2, 4})));
  CHECK(sl.get(1).toTupleRef().elements()[1].toInt() == 7);
  CHECK(snap.at("name").toStringRef() == "x");
}

TEST_CASE("a background checkpoint is collected at the next boundary: its hooks see complete files; false keeps Determined's timing") {
  for (const bool background : {true, false}) {
    CAPTURE(background);
    Record rec;
    auto ctx = dtl::init(test::init_options(background ? "bg-on" : "bg-off"));
    auto watcher = std::make_shared<WriteWatcher>(rec);
    LinearTrial trial(ctx, rec, {.extra_callback = watcher});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{12},
                                  .validation_period = dtl::Batch{4},
                                  .checkpoint_period = dtl::Batch{4},
                                  .quiet = true,
                                  .checkpoint_in_background = background});
    CHECK(rec.checkpoints == V{4, 8, 12});  // taken at the same batches either way
    // Collected at the next boundary (batch 8 for the one taken at 4), the last one at the end of fit.
    CHECK(rec.written == (background ? V{8, 12, 12} : V{4, 8, 12}));
    CHECK(watcher->complete == std::vector<bool>{true, true, true});
    REQUIRE(watcher->uploaded.size() == 3);
    CHECK(rec.written_dirs.back().filename() == watcher->uploaded.back());
    // Flushed before fit returns: `latest` is the last one, no temporary left.
    CHECK(test::latest_checkpoint(ctx.run_dir()).filename() == watcher->uploaded.back());
    for (const auto& e : std::filesystem::directory_iterator(ctx.run_dir() / "checkpoints"))
      CHECK(!e.path().filename().string().starts_with(".tmp-"));
    std::filesystem::remove_all(ctx.run_dir());
  }
}

TEST_CASE("a background write that fails is raised at the next boundary; the checkpoint before it stays latest") {
  Record rec;
  auto ctx = dtl::init(test::init_options("bg-fail"));
  auto watcher = std::make_shared<WriteWatcher>(rec, 8);
  LinearTrial trial(ctx, rec, {.extra_callback = watcher});
  std::string what;
  try {
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{16},
                                  .validation_period = dtl::Batch{4},
                                  .checkpoint_period = dtl::Batch{4},
                                  .quiet = true});
  } catch (const dtl::CheckpointError& e) {
    what = e.what();
  }
  CHECK(what.find("cannot save: an undefined tensor") != std::string::npos);
  CHECK(rec.batches == 12);  // training went on to the next boundary, where the failure surfaced
  CHECK(watcher->complete == std::vector<bool>{true});  // only the one taken at batch 4 was written
  REQUIRE(watcher->uploaded.size() == 1);
  CHECK(test::latest_checkpoint(ctx.run_dir()).filename() == watcher->uploaded[0]);
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("a write in flight when training fails is finished, not lost") {
  Record rec;
  auto ctx = dtl::init(test::init_options("bg-inflight"));
  LinearTrial trial(ctx, rec, {.throw_at_batch = 6});
  std::string what;
  try {
    // Reported every 100 batches: nothing collects the checkpoint taken at batch 4 before the failure at 6.
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{12}, .checkpoint_period = dtl::Batch{4}, .quiet = true});
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  CHECK(what == "train_batch failed on purpose");
  CHECK(rec.checkpoints == V{4});
  CHECK(rec.written.empty());  // never collected...
  const auto latest = test::latest_checkpoint(ctx.run_dir());  // ...but written, complete, and latest
  std::ifstream meta(latest / "metadata.json");
  CHECK(nlohmann::json::parse(meta)["steps_completed"] == 4);
  std::filesystem::remove_all(ctx.run_dir());
}
