// dtl — one run directory, one process: an exclusive flock on <run_dir>/.dtl.lock, held for the
// process's life. A second run (or a second trial) on a directory in use fails at once naming the
// holder; the kernel drops the lock of a process that dies, so a killed run never blocks the next.
#ifndef DTL_DETAIL_RUN_DIR_LOCK_HPP
#define DTL_DETAIL_RUN_DIR_LOCK_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/errors.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

class RunDirLock {
 public:
  explicit RunDirLock(const std::filesystem::path& run_dir) : path_(run_dir / ".dtl.lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      const int err = errno;
      throw ConfigError("dtl: cannot use run directory " + run_dir.string() + ": cannot create " + path_.string() +
                        ": " + std::strerror(err) +
                        (err == EROFS || err == EACCES || err == EPERM
                             ? ". A run writes its metrics and checkpoints there: pass a writable --run-dir (a "
                               "checkpoint on a read-only file system can still be resumed with --resume DIR)"
                             : ""));
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      std::string holder;
      char buf[256];
      const auto n = ::pread(fd_, buf, sizeof buf - 1, 0);
      if (n > 0) holder.assign(buf, static_cast<std::size_t>(n));
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw ConfigError("dtl: run directory " + run_dir.string() + " is in use by another run (" +
                          (holder.empty() ? std::string("holder unknown") : holder) +
                          "); give this run another --run-dir, or wait for that one to end");
      throw ConfigError("dtl: cannot lock " + path_.string() + ": " + std::strerror(err));
    }
    char host[256] = "?";
    ::gethostname(host, sizeof host - 1);
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    localtime_r(&now, &tm);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    const std::string who = "pid " + std::to_string(::getpid()) + " on " + host + ", since " + when + "\n";
    if (::ftruncate(fd_, 0) == 0) {
      [[maybe_unused]] const auto w = ::pwrite(fd_, who.data(), who.size(), 0);
    }
  }
  ~RunDirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing drops the lock; the file stays (a later run reuses it)
  }
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_RUN_DIR_LOCK_HPP
