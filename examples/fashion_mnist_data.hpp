// Fashion-MNIST from Debian's dataset-fashion-mnist package (IDX files, gzipped), read into
// tensors once. No download at run time: a missing file names the package to install.
#ifndef DTL_EXAMPLES_FASHION_MNIST_DATA_HPP
#define DTL_EXAMPLES_FASHION_MNIST_DATA_HPP

#include <dtl/data/dataset.hpp>
#include <dtl/errors.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace fashion_mnist {

inline const std::filesystem::path default_dir = "/usr/share/datasets/fashion-mnist";

/// The whole decompressed file. gzip is part of every Debian system; piping through it keeps
/// the example free of a zlib dependency.
inline std::vector<std::uint8_t> read_gz(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path))
    throw dtl::DataError("fashion-mnist: " + path.string() +
                         " not found: install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist) "
                         "or pass --hparam data_dir=DIR");
  const std::string cmd = "gzip -dc '" + path.string() + "'";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) throw dtl::DataError("fashion-mnist: cannot run gzip for " + path.string());
  std::vector<std::uint8_t> out;
  std::uint8_t buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.insert(out.end(), buf, buf + n);
  if (::pclose(pipe) != 0) throw dtl::DataError("fashion-mnist: " + path.string() + " is not a valid gzip file");
  return out;
}

inline std::uint32_t be32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

/// An IDX file as a uint8 tensor of its dimensions.
inline torch::Tensor read_idx(const std::filesystem::path& path, std::uint32_t magic, std::size_t dims) {
  auto bytes = read_gz(path);
  if (bytes.size() < 4 + 4 * dims || be32(bytes, 0) != magic)
    throw dtl::DataError("fashion-mnist: " + path.string() + " is not an IDX file of the expected kind");
  std::vector<std::int64_t> shape;
  std::size_t count = 1;
  for (std::size_t d = 0; d < dims; ++d) {
    shape.push_back(be32(bytes, 4 + 4 * d));
    count *= static_cast<std::size_t>(shape.back());
  }
  const std::size_t header = 4 + 4 * dims;
  if (bytes.size() != header + count) throw dtl::DataError("fashion-mnist: " + path.string() + " is truncated");
  return torch::from_blob(bytes.data() + header, shape, torch::kUInt8).clone();
}

/// Images as float32 [N, 1, 28, 28], normalized with the training set's mean and std; labels int64.
inline dtl::TensorDataset<2> load(const std::filesystem::path& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  auto images = read_idx(dir / (prefix + "-images-idx3-ubyte.gz"), 0x00000803, 3);
  auto labels = read_idx(dir / (prefix + "-labels-idx1-ubyte.gz"), 0x00000801, 1);
  auto x = images.to(torch::kFloat32).div_(255.0).sub_(0.2860).div_(0.3530).unsqueeze(1);
  return dtl::TensorDataset(std::move(x), labels.to(torch::kInt64));
}

}  // namespace fashion_mnist

#endif  // DTL_EXAMPLES_FASHION_MNIST_DATA_HPP
