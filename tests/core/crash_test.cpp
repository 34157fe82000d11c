// Crash safety and exact resume: tests/crash/resume_child is killed with SIGKILL at random moments
// (during training, data loading by worker threads, validation and checkpoint writes) and resumed
// from `--resume latest`, many times; every resume must succeed and the final weights must equal an
// uninterrupted run's bit for bit. SIGINT asks for a graceful stop, which checkpoints and exits 130 (128 + SIGINT).
#include "test_trials.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

extern char** environ;

#ifndef DTL_RESUME_CHILD
#error "tests/meson.build defines DTL_RESUME_CHILD, the path of the crash test's child program"
#endif

namespace {

pid_t spawn_child(const std::filesystem::path& run, bool resume, std::int64_t batches) {
  std::vector<std::string> args = {DTL_RESUME_CHILD, "--run-dir", run.string(), "--max-length",
                                   "batches=" + std::to_string(batches)};
  if (resume) {
    args.push_back("--resume");
    args.push_back("latest");
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const auto log = (run.parent_path() / (run.filename().string() + ".log")).string();
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  return pid;
}

// Waits up to `ms` for the child; returns its wait status, or nullopt if it is still running.
std::optional<int> wait_for(pid_t pid, int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("crash safety: SIGKILL at random moments, resume from latest, same final weights bit for bit") {
  const auto base = test::temp_run_dir("crash");
  std::filesystem::create_directories(base);
  constexpr std::int64_t kBatches = 300;

  const auto straight = base / "straight";
  const pid_t p0 = spawn_child(straight, false, kBatches);
  const auto s0 = wait_for(p0, 120000);
  REQUIRE(s0.has_value());
  REQUIRE(WIFEXITED(*s0));
  REQUIRE(WEXITSTATUS(*s0) == 0);
  const std::string expected = slurp(straight / "final_weights.txt");
  REQUIRE(!expected.empty());

  const auto crashed = base / "crashed";
  std::mt19937 rng(20261122);
  int kills = 0, sigints = 0, launches = 0;
  for (;;) {
    const bool resume = std::filesystem::exists(crashed / "checkpoints" / "latest");
    const pid_t pid = spawn_child(crashed, resume, kBatches);
    ++launches;
    REQUIRE(launches < 60);
    if (kills + sigints < 12) {
      // Let it get somewhere (startup alone is a few hundred ms), then interrupt it.
      const int delay = std::uniform_int_distribution<int>(100, 700)(rng);
      if (auto st = wait_for(pid, delay)) {  // finished before the interruption
        REQUIRE(WIFEXITED(*st));
        CHECK(WEXITSTATUS(*st) == 0);
        break;
      }
      const bool graceful = (kills + sigints) % 4 == 3;
      ::kill(pid, graceful ? SIGINT : SIGKILL);
      const auto st = wait_for(pid, 60000);
      REQUIRE(st.has_value());
      if (graceful) {
        ++sigints;
        // A stop request checkpoints at the next boundary and exits with 128 + SIGINT (0 if the
        // run had just finished; killed by the signal if it came before the handler was installed).
        CHECK((WIFEXITED(*st) ? WEXITSTATUS(*st) == 128 + SIGINT || WEXITSTATUS(*st) == 0 : WTERMSIG(*st) == SIGINT));
      } else {
        ++kills;
        if (WIFEXITED(*st)) {  // it finished in the same instant
          CHECK(WEXITSTATUS(*st) == 0);
          break;
        }
        CHECK(WTERMSIG(*st) == SIGKILL);
      }
      continue;
    }
    const auto st = wait_for(pid, 120000);
    REQUIRE(st.has_value());
    REQUIRE(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 0);
    if (std::filesystem::exists(crashed / "final_weights.txt")) break;
  }
  MESSAGE("crash test: " << kills << " SIGKILLs and " << sigints << " SIGINTs over " << launches << " launches");
  CHECK(kills >= 6);
  CHECK(slurp(crashed / "final_weights.txt") == expected);
  if (slurp(crashed / "final_weights.txt") != expected) MESSAGE("child log: " << slurp(base / "crashed.log"));
  std::filesystem::remove_all(base);
}
