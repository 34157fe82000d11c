// File-system faults for tests, as an LD_PRELOAD library: what a full disk or a read-only file
// system does to a program, which a root sandbox cannot produce with real mounts.
//   DTL_FAULT=enospc  writes (write, writev, pwrite) to files whose path contains DTL_FAULT_PATH
//                     fail with ENOSPC, as on a full disk (opening and creating still work)
//   DTL_FAULT=erofs   creating or opening for writing (open, openat, fopen, mkdir) anything whose
//                     path contains DTL_FAULT_PATH fails with EROFS
// Only the calls a program makes through libc are affected; nothing else changes.
// The build defines _FILE_OFFSET_BITS=64, which renames open to open64 etc.: here both names are
// defined, each on its own.
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

enum class Fault { none, enospc, erofs };

Fault fault() {
  const char* f = std::getenv("DTL_FAULT");
  if (f == nullptr) return Fault::none;
  if (std::strcmp(f, "enospc") == 0) return Fault::enospc;
  if (std::strcmp(f, "erofs") == 0) return Fault::erofs;
  return Fault::none;
}

bool matches(const std::string& path) {
  const char* pattern = std::getenv("DTL_FAULT_PATH");
  return pattern != nullptr && *pattern != '\0' && path.find(pattern) != std::string::npos;
}

std::string absolute(const char* path) {
  if (path == nullptr) return {};
  if (path[0] == '/') return path;
  char cwd[4096];
  return std::string(getcwd(cwd, sizeof cwd) ? cwd : "") + "/" + path;
}

bool fd_matches(int fd) {
  char link[64];
  char path[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  return matches(path);
}

bool write_fails(int fd) {
  if (fault() == Fault::enospc && fd_matches(fd)) {
    errno = ENOSPC;
    return true;
  }
  return false;
}

bool create_fails(const char* path, bool writing) {
  if (writing && fault() == Fault::erofs && matches(absolute(path))) {
    errno = EROFS;
    return true;
  }
  return false;
}

bool writes(int flags) { return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0; }
bool writes(const char* mode) { return mode != nullptr && (std::strchr(mode, 'w') || std::strchr(mode, 'a') || std::strchr(mode, '+')); }

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

// open()'s third argument, which it has only when it may create a file: `mode`.
#define DTL_FAULT_MODE_ARG(flags)          \
  mode_t mode = 0;                         \
  if ((flags) & (O_CREAT | O_TMPFILE)) {   \
    va_list ap;                            \
    va_start(ap, flags);                   \
    mode = va_arg(ap, mode_t);             \
    va_end(ap);                            \
  }

extern "C" {

ssize_t write(int fd, const void* buf, size_t n) {
  if (write_fails(fd)) return -1;
  return real<ssize_t (*)(int, const void*, size_t)>("write")(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec* iov, int count) {
  if (write_fails(fd)) return -1;
  return real<ssize_t (*)(int, const struct iovec*, int)>("writev")(fd, iov, count);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  if (write_fails(fd)) return -1;
  return real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite")(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  if (write_fails(fd)) return -1;
  return real<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64")(fd, buf, n, off);
}

int open(const char* path, int flags, ...) {
  DTL_FAULT_MODE_ARG(flags);
  if (create_fails(path, writes(flags))) return -1;
  return real<int (*)(const char*, int, ...)>("open")(path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  DTL_FAULT_MODE_ARG(flags);
  if (create_fails(path, writes(flags))) return -1;
  return real<int (*)(const char*, int, ...)>("open64")(path, flags, mode);
}

int openat(int dirfd, const char* path, int flags, ...) {
  DTL_FAULT_MODE_ARG(flags);
  if (create_fails(path, writes(flags))) return -1;
  return real<int (*)(int, const char*, int, ...)>("openat")(dirfd, path, flags, mode);
}

FILE* fopen(const char* path, const char* mode) {
  if (create_fails(path, writes(mode))) return nullptr;
  return real<FILE* (*)(const char*, const char*)>("fopen")(path, mode);
}

FILE* fopen64(const char* path, const char* mode) {
  if (create_fails(path, writes(mode))) return nullptr;
  return real<FILE* (*)(const char*, const char*)>("fopen64")(path, mode);
}

int mkdir(const char* path, mode_t mode) {
  if (create_fails(path, true)) return -1;
  return real<int (*)(const char*, mode_t)>("mkdir")(path, mode);
}

}  // extern "C"
