// Tests that call out: the Python interpreter the interop tests use, files under tests/, and
// running a command for its output. Torch-free, so torch-free and torch tests share it.
#ifndef DTL_TESTS_SUPPORT_EXTERNAL_HPP
#define DTL_TESTS_SUPPORT_EXTERNAL_HPP

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace test_support {

namespace fs = std::filesystem;

/// The Python whose torch matches the LibTorch the tests were built against (meson passes it as
/// DTL_BUILD_PYTHON: the wheel's .venv/bin/python3, or Debian's /usr/bin/python3 with
/// python3-torch for Debian's LibTorch), so interop runs against the same version on both sides.
/// The environment variable DTL_TEST_PYTHON overrides it.
inline std::string python() {
  const char* env = std::getenv("DTL_TEST_PYTHON");
#ifdef DTL_BUILD_PYTHON
  return env && *env ? env : DTL_BUILD_PYTHON;
#else
  return env && *env ? env : "/usr/bin/python3";
#endif
}

/// torchrun of that Python: its torch's launcher, so the agent's store speaks the same protocol
/// as the LibTorch the ranks use.
inline std::vector<std::string> torchrun() { return {python(), "-m", "torch.distributed.run"}; }

/// A file under tests/. Meson may compile with __FILE__ relative to the build directory, so a
/// relative path is looked up from the working directory and from each ancestor of the test
/// executable.
inline fs::path test_file(const fs::path& rel_to_tests) {
  const fs::path rel = fs::path(__FILE__).parent_path().parent_path() / rel_to_tests;
  if (rel.is_absolute()) return rel;
  std::vector<fs::path> bases{fs::current_path()};
  std::error_code ec;
  for (fs::path p = fs::read_symlink("/proc/self/exe", ec).parent_path(); !ec && !p.empty(); p = p.parent_path()) {
    bases.push_back(p);
    if (p == p.root_path()) break;
  }
  for (const auto& base : bases)
    if (fs::exists(base / rel)) return fs::weakly_canonical(base / rel);
  return rel;
}

struct Run {
  int status = -1;  ///< exit status; -1 if it did not exit normally
  std::string output;
};

/// Runs a shell command; stdout and stderr come back together.
inline Run run_command(const std::string& cmd) {
  Run r;
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Why python() cannot be used for torch interop (not installed, or no torch); nullopt if it can.
inline std::optional<std::string> python_torch_missing() {
  static const std::optional<std::string> missing = []() -> std::optional<std::string> {
    if (::access(python().c_str(), X_OK) != 0) return python() + " not found";
    auto r = run_command(python() + " -c 'import torch'");
    if (r.status != 0) {  // the traceback's last line says why
      auto out = r.output;
      while (!out.empty() && out.back() == '\n') out.pop_back();
      return python() + " cannot import torch (" + out.substr(out.find_last_of('\n') + 1) + ")";
    }
    return std::nullopt;
  }();
  return missing;
}

/// The events of a TensorBoard file as tests/log/decode_tfevents.py (an independent decoder)
/// reports them, one JSON object each; `run` receives the raw result (status, output).
inline std::vector<nlohmann::json> decode_tfevents(const fs::path& file, Run* run = nullptr) {
  Run r = run_command(shell_quote(python()) + " " + shell_quote(test_file("log/decode_tfevents.py").string()) + " " +
                      shell_quote(file.string()));
  std::vector<nlohmann::json> events;
  if (r.status == 0) {
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) events.push_back(nlohmann::json::parse(line));
  }
  if (run) *run = std::move(r);
  return events;
}

}  // namespace test_support

#endif  // DTL_TESTS_SUPPORT_EXTERNAL_HPP
