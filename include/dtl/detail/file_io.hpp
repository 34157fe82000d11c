// dtl — small file helpers dtl's parts share: write and read a whole file, make a file, a directory
// or a whole file system durable. Their errors speak of checkpoints, which is what they serve.
#ifndef DTL_DETAIL_FILE_IO_HPP
#define DTL_DETAIL_FILE_IO_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/compiled_lib.hpp>

#include <filesystem>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE void fsync_path(const std::filesystem::path& p, bool directory);

/// Writes a small file; a checkpoint makes all its files durable at once (sync_file_system).
DTL_INLINE void write_file(const std::filesystem::path& p, const std::string& bytes);

/// Makes everything written on `p`'s file system durable in one call (syncfs): every file of a
/// checkpoint at once, instead of an fsync per file.
DTL_INLINE void sync_file_system(const std::filesystem::path& p);

DTL_INLINE std::string read_file(const std::filesystem::path& p);

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/detail/file_io-inl.hpp>
#endif

#endif  // DTL_DETAIL_FILE_IO_HPP
