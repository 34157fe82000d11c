// dtl::read_idx and dtl::load_mnist on files written here: every IDX element type in its
// big-endian layout, gzipped and plain, and each way a file can be wrong.
#include "../prelude.hpp"

#include <dtl/data/idx.hpp>

#include "../support/errors.hpp"

#include <zlib.h>

#include <fstream>
#include <random>

namespace {

std::filesystem::path idx_dir() {
  auto d = std::filesystem::temp_directory_path() /
           ("dtl-idx-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(d);
  return d;
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

/// An IDX file's bytes: header, then `data` (already big-endian).
std::string idx_bytes(int code, const std::vector<std::uint32_t>& dims, const std::string& data) {
  std::string s{'\0', '\0', static_cast<char>(code), static_cast<char>(dims.size())};
  for (auto d : dims) s += be32(d);
  return s + data;
}

void write_plain(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}
void write_gz(const std::filesystem::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

}  // namespace

TEST_CASE("read_idx: every element type, big-endian, gzipped or plain") {
  const auto dir = idx_dir();
  // uint8 [2, 3]
  std::string u8;
  for (int i = 0; i < 6; ++i) u8 += static_cast<char>(250 + i % 6);
  write_gz(dir / "u8.gz", idx_bytes(0x08, {2, 3}, u8));
  write_plain(dir / "u8", idx_bytes(0x08, {2, 3}, u8));
  for (const auto* name : {"u8.gz", "u8"}) {
    const auto t = dtl::read_idx(dir / name);
    CHECK((t.scalar_type() == torch::kUInt8));
    CHECK((t.sizes() == torch::IntArrayRef{2, 3}));
    CHECK(t[1][2].item<int>() == 255);
    CHECK(t[0][0].item<int>() == 250);
  }
  // int8 [2]: -1, 5
  write_plain(dir / "i8", idx_bytes(0x09, {2}, std::string{'\xff', '\x05'}));
  CHECK(torch::equal(dtl::read_idx(dir / "i8"), torch::tensor({-1, 5}, torch::kInt8)));
  // int16 [2]: -2, 258
  write_plain(dir / "i16", idx_bytes(0x0B, {2}, std::string{'\xff', '\xfe', '\x01', '\x02'}));
  CHECK(torch::equal(dtl::read_idx(dir / "i16"), torch::tensor({-2, 258}, torch::kInt16)));
  // int32 [1, 1]: 0x01020304
  write_gz(dir / "i32.gz", idx_bytes(0x0C, {1, 1}, be32(0x01020304)));
  CHECK(dtl::read_idx(dir / "i32.gz").item<std::int32_t>() == 0x01020304);
  // float32 [1]: 1.5f = 0x3FC00000
  write_plain(dir / "f32", idx_bytes(0x0D, {1}, be32(0x3FC00000)));
  CHECK(dtl::read_idx(dir / "f32").item<float>() == 1.5f);
  // float64 [1]: -0.25 = 0xBFD0000000000000
  write_plain(dir / "f64", idx_bytes(0x0E, {1}, be32(0xBFD00000) + be32(0)));
  CHECK(dtl::read_idx(dir / "f64").item<double>() == -0.25);
  // zero images
  write_plain(dir / "empty", idx_bytes(0x08, {0, 28, 28}, ""));
  CHECK(dtl::read_idx(dir / "empty").size(0) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("read_idx: a missing, foreign, truncated or corrupt file is a DataError naming it") {
  const auto dir = idx_dir();
  auto error = [&](const char* name) {
    return test_support::error_of<dtl::DataError>([&] { (void)dtl::read_idx(dir / name); });
  };
  CHECK(test_support::contains(error("nope"), (dir / "nope").string() + " does not exist"));
  // An empty file (round three: it was "not an IDX file (its first two bytes are not zero)").
  write_plain(dir / "zero.gz", "");
  CHECK(test_support::contains(error("zero.gz"), (dir / "zero.gz").string() + " is empty (0 bytes)"));
  write_gz(dir / "nothing.gz", "");
  CHECK(test_support::contains(error("nothing.gz"), "decompresses to nothing"));
  write_plain(dir / "text", "hello, world");
  CHECK(test_support::contains(error("text"), "is not an IDX file"));
  write_plain(dir / "type", idx_bytes(0x07, {1}, "x"));
  CHECK(test_support::contains(error("type"), "element type code 7"));
  write_plain(dir / "short", idx_bytes(0x08, {2, 3}, "abc"));
  CHECK(test_support::contains(error("short"), "holds 3 bytes of data, its header declares 6 (truncated)"));
  write_plain(dir / "long", idx_bytes(0x08, {2}, "abc"));
  CHECK(test_support::contains(error("long"), "holds 3 bytes of data, its header declares 2"));
  write_plain(dir / "huge", idx_bytes(0x0C, {0xffffffffu, 0xffffffffu}, "abcd"));
  CHECK(test_support::contains(error("huge"), "declares more elements than the file holds"));
  write_plain(dir / "header", std::string{'\0', '\0', '\x08', '\x03', '\0'});
  CHECK(test_support::contains(error("header"), "truncated inside its header"));
  std::string gz;
  {
    write_gz(dir / "whole.gz", idx_bytes(0x08, {4096}, std::string(4096, 'x')));
    std::ifstream in(dir / "whole.gz", std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  write_plain(dir / "cut.gz", gz.substr(0, gz.size() / 2));
  CHECK(test_support::contains(error("cut.gz"), "cut.gz"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("load_mnist: a directory of MNIST-format files, gzipped or not, as a TensorDataset") {
  const auto dir = idx_dir();
  std::string pixels;
  for (int i = 0; i < 3 * 2 * 2; ++i) pixels += static_cast<char>(i * 20);
  write_gz(dir / "train-images-idx3-ubyte.gz", idx_bytes(0x08, {3, 2, 2}, pixels));
  write_plain(dir / "train-labels-idx1-ubyte", idx_bytes(0x08, {3}, std::string{'\x07', '\x00', '\x09'}));
  auto train = dtl::load_mnist(dir, dtl::MnistSplit::train);
  CHECK(train.size() == 3);
  const std::vector<std::int64_t> all{0, 1, 2};
  auto [x, y] = train.get_batch(all);
  CHECK((x.sizes() == torch::IntArrayRef{3, 1, 2, 2}));
  CHECK((x.scalar_type() == torch::kFloat32));
  CHECK(x[2][0][1][1].item<float>() == doctest::Approx(220.0 / 255.0));
  CHECK(torch::equal(y, torch::tensor({7, 0, 9}, torch::kLong)));
  auto normalized = dtl::load_mnist(dir, dtl::MnistSplit::train, {.normalize = std::pair{0.5, 0.25}});
  CHECK(std::get<0>(normalized.get_batch(all))[0][0][0][0].item<float>() == doctest::Approx(-2.0));

  const auto missing = test_support::error_of<dtl::DataError>([&] { (void)dtl::load_mnist(dir, dtl::MnistSplit::test); });
  CHECK(test_support::contains(missing, "t10k-images-idx3-ubyte"));
  write_plain(dir / "t10k-images-idx3-ubyte", idx_bytes(0x08, {3, 2, 2}, pixels));
  write_plain(dir / "t10k-labels-idx1-ubyte", idx_bytes(0x08, {2}, std::string{'\x01', '\x02'}));
  const auto mismatch = test_support::error_of<dtl::DataError>([&] { (void)dtl::load_mnist(dir, dtl::MnistSplit::test); });
  CHECK(test_support::contains(mismatch, "holds 2 labels for 3 images"));
  std::filesystem::remove_all(dir);
}
