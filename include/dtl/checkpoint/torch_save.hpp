// dtl — torch.save's file format from C++: the zip container (data.pkl + one record per
// storage) that Python's torch.load(path, weights_only=True) reads, and a reader for what
// Python's torch.save writes. The pickle itself is dtl's restricted codec (pickle.hpp); the
// implementation (torch_save-inl.hpp) maps it to c10::IValue and tensors.
#ifndef DTL_CHECKPOINT_TORCH_SAVE_HPP
#define DTL_CHECKPOINT_TORCH_SAVE_HPP

#include <torch/torch.h>

#include <dtl/detail/compiled_lib.hpp>

#include <filesystem>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Writes `v` to `file` in torch.save's zip format (torch 1.13: records data.pkl, data/<key>
/// per storage, version), readable by Python's torch.load(file, weights_only=True) and by
/// load_pickle_archive. Storages are written from the tensors' own memory (CPU tensors are
/// never copied). With `sync`, the file is fsynced before close; making the write atomic
/// (temporary name, rename, directory fsync) is the caller's job. On failure the partial file
/// is removed and CheckpointError names the file and the cause.
DTL_INLINE void save_pickle_archive(const c10::IValue& v, const std::filesystem::path& file, bool sync = false);

/// Reads a file torch.save wrote (Python or save_pickle_archive): finds its data.pkl,
/// unpickles it with dtl's restricted loader (refusing any global outside the allow-list,
/// never executing anything) and rebuilds each tensor on the CPU over its storage record, so
/// views keep sharing memory. See from_pickle_value for the IValue shapes. Throws
/// CheckpointError naming the file and the problem: missing, not a zip, torch's legacy
/// pre-1.6 format, a missing or short record, a record whose bytes fail its CRC-32, or a
/// corrupt or refused pickle.
[[nodiscard]] DTL_INLINE c10::IValue load_pickle_archive(const std::filesystem::path& file);

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/checkpoint/torch_save-inl.hpp>
#endif

#endif  // DTL_CHECKPOINT_TORCH_SAVE_HPP
