// dtl — the non-template definitions of <dtl/detail/file_io.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_DETAIL_FILE_IO_INL_HPP
#define DTL_DETAIL_FILE_IO_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/file_io.hpp>
#include <dtl/errors.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <ios>
#include <sstream>
#include <stdexcept>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE void fsync_path(const std::filesystem::path& p, bool directory) {
  const int fd = ::open(p.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw std::runtime_error("dtl: checkpoint: cannot open " + p.string() + " to sync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("dtl: checkpoint: fsync failed for " + p.string());
}

DTL_INLINE void write_file(const std::filesystem::path& p, const std::string& bytes) {
  errno = 0;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out)
    throw CheckpointError("dtl: checkpoint: cannot write " + p.string() +
                          (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()));
}

DTL_INLINE void sync_file_system(const std::filesystem::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw std::runtime_error("dtl: checkpoint: cannot open " + p.string() + " to sync it");
  const int rc = ::syncfs(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("dtl: checkpoint: syncfs failed for " + p.string());
}

DTL_INLINE std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("dtl: checkpoint: cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_FILE_IO_INL_HPP
