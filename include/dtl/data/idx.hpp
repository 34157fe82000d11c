// dtl — IDX files, the format of MNIST, Fashion-MNIST, KMNIST and EMNIST, gzipped or not, read
// into tensors (LibTorch's own MNIST reader needs the files unpacked first); and an MNIST-format
// dataset directory as a TensorDataset.
#ifndef DTL_DATA_IDX_HPP
#define DTL_DATA_IDX_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/data/dataset.hpp>
#include <dtl/errors.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

namespace detail {

/// The whole file, decompressed when it is gzip (zlib reads a plain file as it is).
inline std::vector<std::uint8_t> read_maybe_gzipped(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw DataError("dtl: read_idx: " + path.string() + " does not exist (or is not a file)");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError("dtl: read_idx: cannot open " + path.string());
  std::vector<std::uint8_t> out;
  std::vector<std::uint8_t> buf(1 << 20);
  for (;;) {
    const int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      const std::string what = gzerror(f, &code);
      gzclose(f);
      throw DataError("dtl: read_idx: " + path.string() + " is not a readable gzip file (" + what + ")");
    }
    if (n == 0) break;
    out.insert(out.end(), buf.begin(), buf.begin() + n);
  }
  gzclose(f);
  return out;
}

}  // namespace detail

/// An IDX file as a tensor of its element type and dimensions: `[magic: 0 0 type ndim]`, ndim
/// big-endian uint32 sizes, then the elements, big-endian. Types: 0x08 uint8, 0x09 int8, 0x0B int16,
/// 0x0C int32, 0x0D float32, 0x0E float64. A `.gz` file (or any gzip file) is decompressed.
///   auto images = dtl::read_idx("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");  // uint8 [60000, 28, 28]
/// Errors (DataError) name the file and what is wrong with it: missing, not gzip, not IDX, truncated.
inline torch::Tensor read_idx(const std::filesystem::path& path) {
  const auto bytes = detail::read_maybe_gzipped(path);
  const std::string where = "dtl: read_idx: " + path.string();
  if (bytes.empty()) {
    std::error_code ec;
    const bool zero = std::filesystem::file_size(path, ec) == 0 && !ec;
    throw DataError(where + (zero ? " is empty (0 bytes)" : " decompresses to nothing (an empty gzip stream)") +
                    ": an interrupted download or copy? Fetch or copy the file again");
  }
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0)
    throw DataError(where + " is not an IDX file (its first two bytes are not zero)");
  const int code = bytes[2];
  const std::size_t ndim = bytes[3];
  torch::ScalarType type{};
  std::size_t width = 0;
  switch (code) {
    case 0x08: type = torch::kUInt8, width = 1; break;
    case 0x09: type = torch::kInt8, width = 1; break;
    case 0x0B: type = torch::kInt16, width = 2; break;
    case 0x0C: type = torch::kInt32, width = 4; break;
    case 0x0D: type = torch::kFloat32, width = 4; break;
    case 0x0E: type = torch::kFloat64, width = 8; break;
    default:
      throw DataError(where + " has element type code " + std::to_string(code) +
                      ", not one of IDX's (0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E)");
  }
  const std::size_t header = 4 + 4 * ndim;
  if (bytes.size() < header) throw DataError(where + " is truncated inside its header");
  std::vector<std::int64_t> shape;
  std::size_t count = 1;
  for (std::size_t d = 0; d < ndim; ++d) {
    const auto* p = bytes.data() + 4 + 4 * d;
    const std::uint32_t n = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
    shape.push_back(n);
    if (n != 0 && count > (bytes.size() / width) / n)
      throw DataError(where + " declares more elements than the file holds (truncated)");
    count *= n;
  }
  if (bytes.size() - header != count * width)
    throw DataError(where + " holds " + std::to_string(bytes.size() - header) + " bytes of data, its header declares " +
                    std::to_string(count * width) + (bytes.size() - header < count * width ? " (truncated)" : ""));
  auto out = torch::empty(shape, torch::TensorOptions().dtype(type));
  auto* dst = static_cast<std::uint8_t*>(out.data_ptr());
  const auto* src = bytes.data() + header;
  if (width == 1) {
    std::memcpy(dst, src, count);
  } else {
    for (std::size_t i = 0; i < count; ++i)  // big-endian elements to this (little-endian) host
      std::reverse_copy(src + i * width, src + (i + 1) * width, dst + i * width);
  }
  return out;
}

/// Which half of an MNIST-format dataset.
enum class MnistSplit { train, test };

struct MnistOptions {
  /// Subtract the mean and divide by the standard deviation after scaling to [0, 1] (e.g.
  /// Fashion-MNIST's {0.2860, 0.3530}); none keeps [0, 1].
  std::optional<std::pair<double, double>> normalize;
};

/// An MNIST-format directory (MNIST, Fashion-MNIST, KMNIST) as `(images, labels)`: images float32
/// [N, 1, H, W] in [0, 1] (normalized if asked), labels int64 [N]. It reads
/// `train-images-idx3-ubyte` / `train-labels-idx1-ubyte` (or `t10k-…` for the test split), each
/// gzipped (`.gz`) or not.
///   auto train = dtl::load_mnist("/usr/share/datasets/fashion-mnist", dtl::MnistSplit::train);
///   dtl::DataLoader(std::move(train), {.batch_size = 64, .shuffle = true});
inline TensorDataset<2> load_mnist(const std::filesystem::path& dir, MnistSplit split, MnistOptions options = {}) {
  const std::string prefix = split == MnistSplit::train ? "train" : "t10k";
  auto find = [&](const std::string& name) {
    for (const auto& candidate : {dir / (name + ".gz"), dir / name})
      if (std::filesystem::exists(candidate)) return candidate;
    throw DataError("dtl: load_mnist: neither " + (dir / name).string() + " nor " + (dir / (name + ".gz")).string() +
                    " exists; an MNIST-format directory holds train-/t10k-images-idx3-ubyte and "
                    "-labels-idx1-ubyte, gzipped or not");
  };
  const auto images_file = find(prefix + "-images-idx3-ubyte");
  const auto labels_file = find(prefix + "-labels-idx1-ubyte");
  auto images = read_idx(images_file);
  auto labels = read_idx(labels_file);
  if (images.dim() != 3 || images.scalar_type() != torch::kUInt8)
    throw DataError("dtl: load_mnist: " + images_file.string() + " is not uint8 images [N, H, W]");
  if (labels.dim() != 1 || labels.size(0) != images.size(0))
    throw DataError("dtl: load_mnist: " + labels_file.string() + " holds " +
                    (labels.dim() == 1 ? std::to_string(labels.size(0)) + " labels" : "no label vector") + " for " +
                    std::to_string(images.size(0)) + " images in " + images_file.string());
  auto x = images.to(torch::kFloat32).div_(255.0).unsqueeze(1);
  if (options.normalize) x.sub_(options.normalize->first).div_(options.normalize->second);
  return TensorDataset(std::move(x), labels.to(torch::kInt64));
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DATA_IDX_HPP
