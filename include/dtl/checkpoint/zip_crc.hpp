// dtl — the CRC-32 each record of a zip archive (torch.save's format) declares in the central
// directory, and the check of a record's bytes against it with zlib's crc32. PyTorch's reader
// skips this check (its miniz is built without reader CRC checks), so a flipped byte in a tensor
// would load silently; dtl's loader verifies every record it reads.
#ifndef DTL_CHECKPOINT_ZIP_CRC_HPP
#define DTL_CHECKPOINT_ZIP_CRC_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/errors.hpp>

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

namespace zip_impl {
inline std::uint32_t u16(const unsigned char* p) { return static_cast<std::uint32_t>(p[0] | (p[1] << 8)); }
inline std::uint32_t u32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
inline std::uint64_t u64(const unsigned char* p) {
  return static_cast<std::uint64_t>(u32(p)) | (static_cast<std::uint64_t>(u32(p + 4)) << 32);
}
}  // namespace zip_impl

/// Every record's declared CRC-32, by name without the archive's top directory ("data.pkl",
/// "data/0", as PyTorchStreamReader names them). Throws CheckpointError (prefixed by `where`) when
/// the central directory cannot be read.
inline std::unordered_map<std::string, std::uint32_t> zip_record_crcs(const std::filesystem::path& file,
                                                                      const std::string& where) {
  using namespace zip_impl;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw CheckpointError(where + "cannot be opened");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  const std::uint64_t tail = std::min<std::uint64_t>(size, 65535 + 22 + 20);
  std::vector<unsigned char> buf(tail);
  in.seekg(static_cast<std::streamoff>(size - tail));
  in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(tail));
  // The end-of-central-directory record, searched from the end (a comment may follow it).
  std::int64_t eocd = -1;
  for (auto i = static_cast<std::int64_t>(tail) - 22; i >= 0; --i)
    if (u32(&buf[static_cast<std::size_t>(i)]) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd < 0) throw CheckpointError(where + "has no zip central directory (truncated file?)");
  const unsigned char* e = &buf[static_cast<std::size_t>(eocd)];
  std::uint64_t entries = u16(e + 10), cd_size = u32(e + 12), cd_offset = u32(e + 16);
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {  // zip64
    if (eocd < 20 || u32(e - 20) != 0x07064b50) throw CheckpointError(where + "has a damaged zip64 locator");
    const std::uint64_t z64 = u64(e - 20 + 8);
    unsigned char rec[56];
    in.seekg(static_cast<std::streamoff>(z64));
    in.read(reinterpret_cast<char*>(rec), sizeof rec);
    if (!in || u32(rec) != 0x06064b50) throw CheckpointError(where + "has a damaged zip64 directory record");
    entries = u64(rec + 32);
    cd_size = u64(rec + 40);
    cd_offset = u64(rec + 48);
  }
  if (cd_offset + cd_size > size) throw CheckpointError(where + "has a central directory past its end (truncated file?)");
  std::vector<unsigned char> cd(static_cast<std::size_t>(cd_size));
  in.seekg(static_cast<std::streamoff>(cd_offset));
  in.read(reinterpret_cast<char*>(cd.data()), static_cast<std::streamsize>(cd_size));
  if (!in) throw CheckpointError(where + "has an unreadable central directory");
  std::unordered_map<std::string, std::uint32_t> out;
  std::size_t p = 0;
  for (std::uint64_t n = 0; n < entries; ++n) {
    if (p + 46 > cd.size() || u32(&cd[p]) != 0x02014b50)
      throw CheckpointError(where + "has a damaged central directory entry");
    const auto crc = u32(&cd[p + 16]);
    const auto name_len = u16(&cd[p + 28]), extra_len = u16(&cd[p + 30]), comment_len = u16(&cd[p + 32]);
    if (p + 46 + name_len > cd.size()) throw CheckpointError(where + "has a damaged central directory entry");
    std::string name(reinterpret_cast<const char*>(&cd[p + 46]), name_len);
    if (const auto slash = name.find('/'); slash != std::string::npos) name.erase(0, slash + 1);
    out.emplace(std::move(name), crc);
    p += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

/// Throws CheckpointError naming `record` when its bytes do not match the declared CRC-32.
inline void verify_record_crc(const std::unordered_map<std::string, std::uint32_t>& crcs, const std::string& record,
                              const void* data, std::size_t size, const std::string& where) {
  const auto it = crcs.find(record);
  if (it == crcs.end()) throw CheckpointError(where + "the record " + record + " is not in the zip central directory");
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  for (std::size_t left = size; left > 0;) {  // zlib takes uInt lengths
    const auto n = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    crc = ::crc32(crc, p, n);
    p += n;
    left -= n;
  }
  if (static_cast<std::uint32_t>(crc) != it->second)
    throw CheckpointError(where + "the record " + record + " is corrupt: its CRC-32 is " + std::to_string(crc) +
                          " but the archive declares " + std::to_string(it->second) +
                          " (flipped bytes on disk?); restore the file or resume from another checkpoint");
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_ZIP_CRC_HPP
