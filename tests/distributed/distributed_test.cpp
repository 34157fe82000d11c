// Distributed training with real processes (Gloo on this machine): tests/distributed/dist_child
// launched as 1, 2 and 3 ranks — by a plain environment, by torchrun, and as two torchrun
// "nodes" — for equivalence with one process, Determined's reducer cases (T10, T11), faults that
// must end every rank within the timeout, and kill/resume with each rank's own RNG.
#include "../core/test_trials.hpp"
#include "../support/external.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

extern char** environ;

#ifndef DTL_DIST_CHILD
#error "tests/meson.build defines DTL_DIST_CHILD, the path of the distributed tests' child program"
#endif

namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;
using Clock = std::chrono::steady_clock;

/// A TCP port nobody listens on right now.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// Starts `args` with this process's environment plus `extra`, output appended to `log`.
pid_t spawn(const std::vector<std::string>& args, const Env& extra, const fs::path& log) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const auto name = kv.substr(0, kv.find('='));
    if (!extra.contains(name)) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : extra) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> a = args;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // its own group: a kill takes torchrun's workers too
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  REQUIRE(rc == 0);
  return pid;
}

/// Waits for `pid` at most `limit`; SIGKILLs its group past it. Returns the exit status, or
/// 128+signal, or -1 on a timeout.
int wait_for(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  while (Clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Launch {
  fs::path run;
  std::vector<std::string> args;  // after the binary
  Env env;
};

/// `world` processes with a plain torchrun-like environment; returns each rank's exit status.
/// Starts `world` ranks with a plain torchrun-like environment; each rank logs to
/// `<run>.rank<R>.log`, or all to `<run>.log` with `shared_log`.
std::vector<pid_t> start_ranks(std::int64_t world, const Launch& l, bool shared_log = false) {
  const auto port = std::to_string(free_port());
  std::vector<pid_t> pids;
  for (std::int64_t r = 0; r < world; ++r) {
    Env env = l.env;
    env["MASTER_ADDR"] = "127.0.0.1";
    env["MASTER_PORT"] = port;
    env["WORLD_SIZE"] = std::to_string(world);
    env["RANK"] = std::to_string(r);
    env["LOCAL_RANK"] = std::to_string(r);
    env["LOCAL_WORLD_SIZE"] = std::to_string(world);
    std::vector<std::string> args = {DTL_DIST_CHILD, "--run-dir", l.run.string()};
    args.insert(args.end(), l.args.begin(), l.args.end());
    pids.push_back(spawn(args, env, l.run.string() + (shared_log ? "" : ".rank" + std::to_string(r)) + ".log"));
  }
  return pids;
}

std::vector<int> wait_all(const std::vector<pid_t>& pids, std::chrono::seconds limit = std::chrono::seconds(120)) {
  std::vector<int> rc;
  for (auto pid : pids) rc.push_back(wait_for(pid, limit));
  return rc;
}

/// `world` ranks, run to the end; each rank's exit status.
std::vector<int> run_ranks(std::int64_t world, const Launch& l) { return wait_all(start_ranks(world, l)); }

nlohmann::json rank_result(const fs::path& run, std::int64_t r) {
  const auto p = run / ("rank" + std::to_string(r) + ".json");
  REQUIRE_MESSAGE(fs::exists(p), "no " << p << "; log:\n"
                                       << slurp(run.string() + ".rank" + std::to_string(r) + ".log"));
  return nlohmann::json::parse(slurp(p));
}

std::vector<nlohmann::json> records(const fs::path& run, const char* type) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == type) out.push_back(j);
  }
  return out;
}

double max_abs_diff(const nlohmann::json& a, const nlohmann::json& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i].get<double>() - b[i].get<double>()));
  return d;
}

std::vector<std::string> base_args(std::int64_t gbs) {
  return {"--seed", "7", "--hparam", "global_batch_size=" + std::to_string(gbs)};
}

// Exit statuses of every rank (named: braces inside a doctest macro would split its arguments).
const std::vector<int> all_ok1{0}, all_ok2{0, 0}, all_ok3{0, 0, 0}, all_failed2{1, 1};

bool have_torchrun() { return !test_support::python_torch_missing(); }

/// torchrun (the build's Python's) with the arguments after it.
std::vector<std::string> torchrun(std::initializer_list<std::string> args) {
  auto cmd = test_support::torchrun();
  cmd.insert(cmd.end(), args);
  return cmd;
}

// Mid-run: once the chief has reported a training workload, both ranks are past connecting. A fixed
// delay stopped or killed a rank still starting on a loaded machine (seen in CI on both tests), and the
// other rank then rightly said it could not connect instead of what the test looks for.
void wait_until_training(const fs::path& run) {
  for (int i = 0; i < 600 && slurp((run / "metrics.jsonl").string()).find("\"training\"") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

}  // namespace

TEST_CASE("2 ranks x batch b == 1 rank x batch 2b == 1 rank x b with aggregation 2; reducers agree") {
  const auto root = test::temp_run_dir("dist-eq");
  fs::create_directories(root);
  Launch two{root / "two", base_args(8), {}};
  const auto rc2 = run_ranks(2, two);
  REQUIRE_MESSAGE(rc2 == all_ok2, slurp(root.string() + "/two.rank1.log"));
  Launch one{root / "one", base_args(8), {}};
  REQUIRE(run_ranks(1, one) == all_ok1);
  Launch agg{root / "agg", base_args(4), {{"DTL_TEST_AGG", "2"}}};
  agg.args.insert(agg.args.end(), {"--max-length", "batches=48"});
  REQUIRE(run_ranks(1, agg) == all_ok1);

  const auto r0 = rank_result(two.run, 0), r1 = rank_result(two.run, 1);
  // Data parallelism keeps the replicas identical, bit for bit.
  CHECK(r0["weights"] == r1["weights"]);
  CHECK(r0["batches_trained"] == 24);
  // Same mathematics as one process with the global batch; float32 sums in another order
  // differ in the last bits, so the tolerance is 1e-5 (the weights are O(1)).
  const auto w1 = rank_result(one.run, 0)["weights"], wa = rank_result(agg.run, 0)["weights"];
  CHECK(max_abs_diff(r0["weights"], w1) < 1e-5);
  CHECK(max_abs_diff(r0["weights"], wa) < 1e-5);

  // Validation: AVG over all batches, MAX across ranks, and T11's ordered sum on every rank.
  const auto v2 = records(two.run, "validation"), v1 = records(one.run, "validation");
  REQUIRE(v2.size() == 2);  // (not 4: rank 1 reports nothing)
  REQUIRE(v1.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(std::abs(v2[i]["metrics"]["validation_loss"].get<double>() -
                   v1[i]["metrics"]["validation_loss"].get<double>()) < 1e-5);
    CHECK(v2[i]["metrics"]["max_label"] == 46.0);
    CHECK(v2[i]["metrics"]["ordered_sum"] == 1081.0);  // T11: the reducer saw 0..46 in order
    // T10 over real ranks: Σ (batch size · batch index) over both ranks' shards of 47 items in
    // batches of 2 (rank 0: 12 batches of 2; rank 1: 11 of 2 and one of 1).
    CHECK(v2[i]["metrics"]["by_class"] == 253.0);
    CHECK(v2[i]["metrics"]["by_function"] == 253.0);
  }
  // Training: per-batch losses averaged across ranks match one process's within float error;
  // T10's training values are sums over both ranks: Σ (2 ranks · 4 examples) · batch_idx over
  // the workload's batches — what one process with batches of 8 reports too.
  const auto t2 = records(two.run, "training"), t1 = records(one.run, "training");
  REQUIRE(t2.size() == t1.size());  // one record per workload: only the chief writes metrics.jsonl
  std::int64_t previous = 0;
  for (std::size_t i = 0; i < t2.size(); ++i) {
    const auto steps = t2[i]["steps_completed"].get<std::int64_t>();
    double expected = 0;
    for (auto idx = previous; idx < steps; ++idx) expected += 8.0 * static_cast<double>(idx);
    previous = steps;
    CHECK(std::abs(t2[i]["metrics"]["loss"].get<double>() - t1[i]["metrics"]["loss"].get<double>()) < 1e-5);
    CHECK(t2[i]["metrics"]["by_class"] == expected);
    CHECK(t2[i]["metrics"]["by_function"] == expected);
    CHECK(t1[i]["metrics"]["by_class"] == expected);
  }
  // Object collectives with unequal sizes, and the chief's broadcast.
  CHECK(r1["allgather_sizes"] == nlohmann::json::array({1, 2}));
  CHECK(r1["broadcast"] == "from rank 0");
  fs::remove_all(root);
}

TEST_CASE("3 ranks: T11 order, chief's epoch length, every rank identical") {
  const auto root = test::temp_run_dir("dist-3");
  fs::create_directories(root);
  Launch three{root / "three", base_args(9), {}};
  three.args.insert(three.args.end(), {"--max-length", "batches=30"});
  const auto rc = run_ranks(3, three);
  REQUIRE_MESSAGE(rc == all_ok3, slurp(root.string() + "/three.rank2.log"));
  const auto r0 = rank_result(three.run, 0);
  for (std::int64_t r = 1; r < 3; ++r) CHECK(rank_result(three.run, r)["weights"] == r0["weights"]);
  for (const auto& v : records(three.run, "validation")) {
    CHECK(v["metrics"]["ordered_sum"] == 1081.0);
    CHECK(v["metrics"]["max_label"] == 46.0);
  }
  // 96 examples in batches of 3 = 32 batches, sharded over 3 ranks: 11, 11 and 10 per rank.
  // Every rank uses the chief's epoch of 11 steps (Determined's epoch sync, T18), so after 30
  // batches each has trained 2 epochs — rank 2 would count 3 with its own length.
  for (std::int64_t r = 0; r < 3; ++r) CHECK(rank_result(three.run, r)["epochs_trained"] == 2);
  fs::remove_all(root);
}

TEST_CASE("a rank that throws: every rank exits non-zero, naming the failed rank") {
  const auto root = test::temp_run_dir("dist-throw");
  fs::create_directories(root);
  Launch l{root / "run", base_args(8), {{"DTL_TEST_FAIL_AT", "5"}, {"DTL_TEST_FAIL_RANK", "1"}}};
  const auto t0 = Clock::now();
  const auto rc = run_ranks(2, l);
  CHECK(Clock::now() - t0 < std::chrono::seconds(60));
  CHECK(rc[0] == 1);
  CHECK(rc[1] == 1);
  const auto log0 = slurp(root / "run.rank0.log"), log1 = slurp(root / "run.rank1.log");
  CHECK_MESSAGE(log1.find("injected failure at batch 5") != std::string::npos, log1);
  CHECK_MESSAGE(log0.find("rank 1 failed: injected failure at batch 5") != std::string::npos, log0);
  fs::remove_all(root);
}

TEST_CASE("ranks that disagree (hyperparameters, model shapes) stop at wrap_model, every one naming what differs") {
  const auto root = test::temp_run_dir("dist-disagree");
  fs::create_directories(root);
  {  // another hyperparameter on rank 1
    Launch l{root / "hp", base_args(8), {{"DTL_TEST_RANK1_ARGS", "--hparam dropout=0.5"}}};
    const auto t0 = Clock::now();
    const auto rc = run_ranks(2, l);
    CHECK(Clock::now() - t0 < std::chrono::seconds(60));
    CHECK(rc[0] == 1);
    CHECK(rc[1] == 1);
    for (const auto* log : {"hp.rank0.log", "hp.rank1.log"}) {
      const auto text = slurp(root / log);
      CHECK_MESSAGE(text.find("the ranks disagree, so they cannot train together: rank 1 has other hyperparameters: "
                              "dropout = 0.5 (rank 0: 0.0)") != std::string::npos,
                    text);
    }
  }
  {  // another model: a hidden layer of 8 on rank 1 (its hyperparameter differs too)
    Launch l{root / "model", base_args(8), {{"DTL_TEST_RANK1_ARGS", "--hparam hidden=8"}}};
    const auto rc = run_ranks(2, l);
    CHECK(rc[0] == 1);
    CHECK(rc[1] == 1);
    const auto text = slurp(root / "model.rank0.log");
    CHECK_MESSAGE(text.find("rank 1 has another model 0 (wrap_model's 1st call): 0.weight [8,6] Float where rank 0 "
                            "has 0.weight [16,6] Float") != std::string::npos,
                  text);
    CHECK(text.find("hidden = 8 (rank 0: 16)") != std::string::npos);
  }
  fs::remove_all(root);
}

TEST_CASE("a rank killed mid-run: the survivor exits non-zero within the timeout, saying a peer was lost") {
  const auto root = test::temp_run_dir("dist-kill");
  fs::create_directories(root);
  for (const std::int64_t victim : {1, 0}) {
    CAPTURE(victim);
    const auto run = root / ("run" + std::to_string(victim));
    const auto pids = start_ranks(2, {run,
                                      {"--seed", "1", "--max-length", "batches=100000"},
                                      {{"DTL_TEST_SLEEP_MS", "5"},
                                       // Killing the chief: its checkpoints take 300 ms, so the kill most
                                       // likely lands while rank 1 waits for one on the store, not in a
                                       // collective.
                                       {"DTL_TEST_CKPT_SLEEP_MS", victim == 0 ? "300" : "0"},
                                       {"DTL_DIST_TIMEOUT", "20"}}});
    wait_until_training(run);
    ::kill(pids[static_cast<std::size_t>(victim)], SIGKILL);
    const auto t0 = Clock::now();
    const auto survivor = 1 - victim;
    const int rc = wait_for(pids[static_cast<std::size_t>(survivor)], std::chrono::seconds(40));
    wait_for(pids[static_cast<std::size_t>(victim)], std::chrono::seconds(5));
    CHECK(Clock::now() - t0 < std::chrono::seconds(25));  // within the 20 s timeout (plus exit)
    CHECK(rc == 1);
    const auto log = slurp(run.string() + ".rank" + std::to_string(survivor) + ".log");
    CHECK_MESSAGE(log.find("a peer was lost") != std::string::npos, log);
  }
  fs::remove_all(root);
}

TEST_CASE("a rank that stops answering (SIGSTOP): the other fails after the timeout, not never") {
  const auto root = test::temp_run_dir("dist-stop");
  fs::create_directories(root);
  const auto run = root / "run";
  const auto pids = start_ranks(2, {run,
                                    {"--seed", "1", "--max-length", "batches=100000"},
                                    {{"DTL_TEST_SLEEP_MS", "5"}, {"DTL_DIST_TIMEOUT", "5"}}});
  wait_until_training(run);
  ::kill(pids[1], SIGSTOP);
  const auto t0 = Clock::now();
  const int rc = wait_for(pids[0], std::chrono::seconds(60));
  const auto waited = Clock::now() - t0;
  ::kill(pids[1], SIGKILL);
  wait_for(pids[1], std::chrono::seconds(5));
  CHECK(rc == 1);
  CHECK(waited >= std::chrono::seconds(4));  // it waited for the timeout...
  CHECK(waited < std::chrono::seconds(15));  // ...and no longer
  const auto log = slurp(run.string() + ".rank0.log");
  CHECK_MESSAGE(log.find("did not answer within 5 s") != std::string::npos, log);
  fs::remove_all(root);
}

TEST_CASE("chief-only work longer than the timeout: the other ranks wait while the chief is alive") {
  const auto root = test::temp_run_dir("dist-slow-chief");
  fs::create_directories(root);
  auto args = base_args(8);
  args.insert(args.end(), {"--max-length", "batches=8"});
  // Checkpoints at batches 4 and 8 each take 4.5 s on the chief; the collective timeout is 3 s.
  Launch l{root / "run", args, {{"DTL_TEST_CKPT_SLEEP_MS", "4500"}, {"DTL_DIST_TIMEOUT", "3"}}};
  const auto rc = run_ranks(2, l);
  CHECK_MESSAGE(rc == all_ok2, slurp(root.string() + "/run.rank1.log"));
  CHECK(rank_result(l.run, 1)["weights"] == rank_result(l.run, 0)["weights"]);
  fs::remove_all(root);
}

TEST_CASE("kill/resume with 2 ranks and dropout: final weights equal an uninterrupted run's bit for bit") {
  const auto root = test::temp_run_dir("dist-resume");
  fs::create_directories(root);
  auto args = base_args(8);
  args.insert(args.end(), {"--hparam", "dropout=0.3", "--max-length", "batches=60"});
  Launch ref{root / "ref", args, {}};
  REQUIRE(run_ranks(2, ref) == all_ok2);
  const auto expected = rank_result(ref.run, 0)["weights"];

  const auto run = root / "killed";
  std::mt19937 rng(42);
  std::vector<std::int64_t> killed_at;  // the latest checkpoint's batch after each kill
  for (int launch = 0; launch <= 4; ++launch) {
    Launch l{run, args, {{"DTL_TEST_SLEEP_MS", "20"}}};
    if (fs::exists(run / "checkpoints" / "latest")) l.args.insert(l.args.end(), {"--resume", "latest"});
    const auto pids = start_ranks(2, l, /*shared_log=*/true);
    if (launch == 4) {
      REQUIRE_MESSAGE(wait_all(pids) == all_ok2, slurp(run.string() + ".log"));
      break;
    }
    // The whole launch dies at a random moment (as when a machine goes away) after it wrote a
    // checkpoint of its own: waiting for that, not a fixed delay, keeps the kill mid-run however
    // slow a loaded machine starts the ranks.
    const auto latest = run / "checkpoints" / "latest";
    const auto before = fs::exists(latest) ? slurp(latest) : std::string();
    for (const auto t0 = Clock::now(); Clock::now() - t0 < std::chrono::seconds(30);) {
      if (fs::exists(latest) && slurp(latest) != before) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 400)(rng)));
    for (auto pid : pids) ::kill(pid, SIGKILL);
    wait_all(pids, std::chrono::seconds(10));
    killed_at.push_back(fs::exists(run / "checkpoints" / "latest")
                            ? nlohmann::json::parse(slurp(test::latest_checkpoint(run) / "metadata.json"))
                                  .at("steps_completed")
                                  .get<std::int64_t>()
                            : 0);
  }
  // At least one kill interrupted a run that had checkpointed but not finished, so a resume
  // from the middle was exercised.
  CAPTURE(killed_at);
  CHECK(std::any_of(killed_at.begin(), killed_at.end(), [](std::int64_t b) { return b > 0 && b < 60; }));
  const auto r0 = rank_result(run, 0), r1 = rank_result(run, 1);
  CHECK(r0["batches_trained"] == 60);
  CHECK(r0["weights"] == expected);  // exact: every rank's RNG (dropout) and data position restored
  CHECK(r1["weights"] == expected);
  // Each rank's RNG is saved (Determined saves only the chief's).
  const auto st = nlohmann::json::parse(slurp(test::latest_checkpoint(run) / "trial_state.json"));
  REQUIRE(st["ranks"].size() == 2);
  CHECK(st["ranks"][0]["cpu_rng_state"] != st["ranks"][1]["cpu_rng_state"]);
  fs::remove_all(root);
}

TEST_CASE("resume with another world size: 2-rank checkpoint continued by 1 rank, with a note") {
  const auto root = test::temp_run_dir("dist-world");
  fs::create_directories(root);
  auto args = base_args(8);
  Launch two{root / "run", args, {}};
  two.args.insert(two.args.end(), {"--max-length", "batches=12"});
  REQUIRE(run_ranks(2, two) == all_ok2);
  Launch one{root / "run", args, {}};
  one.args.insert(one.args.end(), {"--max-length", "batches=24", "--resume", "latest"});
  REQUIRE(run_ranks(1, one) == all_ok1);
  CHECK(rank_result(one.run, 0)["batches_trained"] == 24);
  const auto log = slurp(root.string() + "/run.rank0.log");
  CHECK_MESSAGE(log.find("written by 2 ranks, this run has 1") != std::string::npos, log);
  fs::remove_all(root);
}

TEST_CASE("a parameter without gradient: an error naming it, or zero with find_unused_parameters") {
  const auto root = test::temp_run_dir("dist-unused");
  fs::create_directories(root);
  auto args = base_args(8);
  args.insert(args.end(), {"--hparam", "unused=true", "--max-length", "batches=6"});
  Launch fails{root / "fails", args, {}};
  const auto t0 = Clock::now();
  CHECK(run_ranks(2, fails) == all_failed2);
  CHECK(Clock::now() - t0 < std::chrono::seconds(60));
  const auto log = slurp(root.string() + "/fails.rank0.log");
  CHECK_MESSAGE(log.find("received no gradient in this step: unused_bias") != std::string::npos, log);
  CHECK_MESSAGE(log.find("find_unused_parameters = true") != std::string::npos, log);
  Launch works{root / "works", args, {}};
  works.args.insert(works.args.end(), {"--hparam", "find_unused=true"});
  REQUIRE(run_ranks(2, works) == all_ok2);
  CHECK(rank_result(works.run, 0)["weights"] == rank_result(works.run, 1)["weights"]);
  fs::remove_all(root);
}

TEST_CASE("gradients averaged as PyTorch's DDP does, bit for bit, on 2 and 3 ranks (its buckets, its 1/world_size)") {
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped the comparison with torch's DDP: " << *why);
    return;
  }
  const auto root = test::temp_run_dir("ddp-parity");
  fs::create_directories(root);
  for (int world : {2, 3}) {
    CAPTURE(world);
    const auto theirs = root / ("ddp" + std::to_string(world) + ".bin");
    const auto mine = root / ("dtl" + std::to_string(world) + ".bin");
    auto cmd = torchrun({"--redirects", "9:1", "--tee", "9:1", "--nproc_per_node=" + std::to_string(world),
                         "--master_port=" + std::to_string(free_port()),
                         test_support::test_file("distributed/ddp_reference.py").string(), theirs.string()});
    const auto py_log = root / ("ddp" + std::to_string(world) + ".log");
    REQUIRE_MESSAGE(wait_for(spawn(cmd, {{"OMP_NUM_THREADS", "1"}}, py_log), std::chrono::seconds(120)) == 0,
                    slurp(py_log));
    Launch l{root / ("run" + std::to_string(world)), {}, {{"DTL_TEST_DDP_PARITY", mine.string()}}};
    const auto rc = run_ranks(world, l);
    for (int r = 0; r < world; ++r)
      REQUIRE_MESSAGE(rc[static_cast<std::size_t>(r)] == 0, slurp(l.run.string() + ".rank" + std::to_string(r) + ".log"));
    const auto a = slurp(theirs), b = slurp(mine);
    REQUIRE(a.size() == 3 * 203530 * sizeof(float));  // three steps of every parameter
    // Step by step, so a difference says where it starts (the first step uses DDP's first
    // layout; the second and third its rebuilt one).
    for (std::size_t step = 0; step < 3; ++step) {
      CAPTURE(step);
      const auto n = a.size() / 3;
      CHECK(a.compare(step * n, n, b, step * n, n) == 0);
    }
  }
  fs::remove_all(root);
}

TEST_CASE("Ctrl-C to a torchrun launch (SIGINT to its process group): every rank checkpoints and exits 130; resume continues") {
  if (!have_torchrun()) {
    MESSAGE("torchrun not available (" << *test_support::python_torch_missing() << "): skipped");
    return;
  }
  const auto root = test::temp_run_dir("dist-ctrl-c");
  fs::create_directories(root);
  const auto run = root / "run";
  const auto launch = [&](const std::string& name, std::vector<std::string> more) {
    auto cmd = torchrun({"--redirects", "9:1", "--tee", "9:1", "--nproc_per_node=2",
                         "--master_port=" + std::to_string(free_port()), "--no_python", DTL_DIST_CHILD, "--run-dir",
                         run.string()});
    auto extra = base_args(8);
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    cmd.insert(cmd.end(), more.begin(), more.end());
    return spawn(cmd, {{"DTL_TEST_SLEEP_MS", "25"}}, root / (name + ".log"));
  };
  // Each rank gets SIGINT from the group, then SIGTERM from torchrun, which forwards it: the
  // second signal used to kill the ranks before their checkpoint.
  const auto pid = launch("first", {"--max-length", "batches=2000"});
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!fs::exists(run / "checkpoints" / "latest") && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(fs::exists(run / "checkpoints" / "latest"));
  ::kill(-pid, SIGINT);
  const int rc = wait_for(pid, std::chrono::seconds(60));
  const auto log = slurp(root / "first.log");
  INFO(log);
  CHECK(rc != -1);  // ended, not hung
  // Both ranks said so once, and both returned from fit (dist_child writes rank<R>.json after it):
  // none was killed by the second signal.
  const auto first = log.find("[dtl] stop requested");
  REQUIRE(first != std::string::npos);
  CHECK(log.find("[dtl] stop requested", first + 1) != std::string::npos);
  REQUIRE(fs::exists(run / "rank0.json"));
  REQUIRE(fs::exists(run / "rank1.json"));
  CHECK(rank_result(run, 0)["weights"] == rank_result(run, 1)["weights"]);
  fs::remove(run / "rank0.json");
  fs::remove(run / "rank1.json");
  const auto stopped_at = nlohmann::json::parse(std::ifstream(dtl::detail::Checkpointer(run / "checkpoints")
                                                                  .resolve("latest") /
                                                              "metadata.json"))["steps_completed"]
                              .get<std::int64_t>();
  CHECK(stopped_at > 0);
  CHECK(stopped_at < 2000);
  // --resume latest continues from there to the end.
  const auto again = launch("resumed", {"--max-length", "batches=" + std::to_string(stopped_at + 12), "--resume", "latest"});
  REQUIRE_MESSAGE(wait_for(again, std::chrono::seconds(120)) == 0, slurp(root / "resumed.log"));
  CHECK(rank_result(run, 0)["weights"] == rank_result(run, 1)["weights"]);
  fs::remove_all(root);
}

TEST_CASE("torchrun: 2 processes on one node, and two torchrun nodes on 127.0.0.1") {
  if (!have_torchrun()) {
    MESSAGE("torchrun not available (" << *test_support::python_torch_missing() << "): skipped");
    return;
  }
  const auto root = test::temp_run_dir("dist-torchrun");
  fs::create_directories(root);
  // Debian's torchrun needs --redirects/--tee naming no existing rank (docs/distributed.md).
  const auto port = std::to_string(free_port());
  auto one_node = torchrun({"--redirects", "9:1", "--tee", "9:1", "--nproc_per_node=2", "--master_port=" + port,
                            "--no_python", DTL_DIST_CHILD, "--run-dir", (root / "node").string()});
  auto extra = base_args(8);
  one_node.insert(one_node.end(), extra.begin(), extra.end());
  REQUIRE_MESSAGE(wait_for(spawn(one_node, {}, root / "node.log"), std::chrono::seconds(120)) == 0,
                  slurp(root / "node.log"));
  const auto a = rank_result(root / "node", 0), b = rank_result(root / "node", 1);
  CHECK(a["weights"] == b["weights"]);
  CHECK(b["local_rank"] == 1);
  CHECK(b["local_size"] == 2);
  CHECK(b["cross_size"] == 1);

  const auto port2 = std::to_string(free_port());
  std::vector<pid_t> nodes;
  for (int node = 0; node < 2; ++node) {
    auto cmd = torchrun({"--redirects", "9:1", "--tee", "9:1", "--nnodes=2", "--node_rank=" + std::to_string(node),
                         "--nproc_per_node=1", "--master_addr=127.0.0.1", "--master_port=" + port2, "--no_python",
                         DTL_DIST_CHILD, "--run-dir", (root / "nodes").string()});
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    nodes.push_back(spawn(cmd, {}, root / ("nodes" + std::to_string(node) + ".log")));
  }
  for (int node = 0; node < 2; ++node)
    REQUIRE_MESSAGE(wait_for(nodes[static_cast<std::size_t>(node)], std::chrono::seconds(120)) == 0,
                    slurp(root / ("nodes" + std::to_string(node) + ".log")));
  const auto n1 = rank_result(root / "nodes", 1);
  CHECK(n1["cross_rank"] == 1);
  CHECK(n1["cross_size"] == 2);
  CHECK(n1["local_rank"] == 0);
  // Same data, same global batch: the same weights as the one-node launch.
  CHECK(n1["weights"] == a["weights"]);
  fs::remove_all(root);
}
