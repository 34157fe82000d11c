// Tests for include/dtl/log/tensorboard.hpp: CRC32C against RFC 3720's vectors and a bitwise
// reference, the protobuf and TFRecord bytes, and files checked by an independent decoder
// (tests/log/decode_tfevents.py: its own bitwise CRC32C and wire-format parser), and TensorBoard's
// own reader where the test Python has it (the .venv of scripts/setup.sh --tests).
#include <dtl/log/tensorboard.hpp>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "../support/external.hpp"

namespace {

namespace fs = std::filesystem;
using dtl::detail::crc32c;
using nlohmann::json;

// ----- helpers -----

// Bit-at-a-time CRC32C, the definition itself, to check the table-driven one against.
std::uint32_t reference_crc32c(std::string_view data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

std::string hex(std::string_view s) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (!out.empty()) out += ' ';
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::uint32_t le32(std::string_view s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
  return v;
}

std::uint64_t le64(std::string_view s, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
  return v;
}

std::string varint(std::uint64_t v) {
  std::string out;
  dtl::detail::append_varint(out, v);
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

// A fresh directory under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("dtl_tensorboard_test_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().starts_with("events.out.tfevents."))
      out.push_back(e.path());
  return out;
}

// test_support::python(): DTL_TEST_PYTHON overrides it (a missing one exercises the skip path).
using test_support::python;

bool have_python() { return ::access(python().c_str(), X_OK) == 0; }

std::string no_python_note() { return python() + " not found: the independent decoder's checks are skipped"; }

/// Why TensorBoard's own reader cannot run here (no python, or no tensorboard package), if so.
std::optional<std::string> event_accumulator_missing() {
  if (!have_python()) return no_python_note();
  const auto probe = test_support::run_command(test_support::shell_quote(python()) +
                                               " -c 'import tensorboard.backend.event_processing.event_accumulator'");
  if (probe.status != 0)
    return "skipped: " + python() + " cannot import tensorboard (scripts/setup.sh --tests installs it in .venv)";
  return std::nullopt;
}

/// What `body` prints as JSON, run after `acc` (TensorBoard's EventAccumulator) has loaded `dir`.
json read_with_event_accumulator(const std::filesystem::path& dir, const std::string& body) {
  const std::string script =
      "import json, math, sys\n"
      "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator\n"
      "acc = EventAccumulator(sys.argv[1], size_guidance={'scalars': 0})\n"
      "acc.Reload()\n" +
      body;
  const auto r = test_support::run_command(test_support::shell_quote(python()) + " -c " +
                                           test_support::shell_quote(script) + " " +
                                           test_support::shell_quote(dir.string()));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  const auto start = r.output.find_first_of("[{");
  REQUIRE_MESSAGE(start != std::string::npos, r.output);
  return json::parse(r.output.substr(start));
}

struct Decoded {
  int status = -1;
  std::string output;
  std::vector<json> events;
};

// Runs the independent decoder on `file`; its stdout (JSON lines) and stderr come back together.
Decoded decode(const fs::path& file) {
  Decoded d;
  test_support::Run run;
  d.events = test_support::decode_tfevents(file, &run);
  d.status = run.status;
  d.output = std::move(run.output);
  return d;
}

// What a value reads back as: TensorBoard's simple_value is a float32.
double as_float32(double v) { return static_cast<double>(static_cast<float>(v)); }

}  // namespace

TEST_SUITE("tensorboard") {
  // ----- CRC32C -----

  TEST_CASE("crc32c: RFC 3720 and the check value") {
    static_assert(crc32c("123456789") == 0xE3069283u);  // the tables are usable at compile time
    CHECK(crc32c("") == 0x00000000u);
    CHECK(crc32c("123456789") == 0xE3069283u);
    std::string zeros(32, '\0'), ones(32, '\xFF'), up, down;
    for (int i = 0; i < 32; ++i) {
      up.push_back(static_cast<char>(i));
      down.push_back(static_cast<char>(31 - i));
    }
    CHECK(crc32c(zeros) == 0x8A9136AAu);
    CHECK(crc32c(ones) == 0x62A8AB43u);
    CHECK(crc32c(up) == 0x46DD794Eu);
    CHECK(crc32c(down) == 0x113FDB5Cu);
    // The std::byte overload reads the same bytes.
    CHECK(crc32c(std::as_bytes(std::span(up.data(), up.size()))) == 0x46DD794Eu);
  }

  TEST_CASE("crc32c: slicing-by-8 equals the bitwise definition at every length and split") {
    std::mt19937 rng(7);
    std::string data;
    for (int i = 0; i < 300; ++i) data.push_back(static_cast<char>(rng()));
    for (std::size_t n = 0; n <= data.size(); ++n) {
      const std::string_view s(data.data(), n);
      REQUIRE(crc32c(s) == reference_crc32c(s));
    }
    // Extending is the same as one pass over the concatenation, whatever the split.
    for (std::size_t cut = 0; cut <= 40; ++cut) {
      const std::string_view a(data.data(), cut), b(data.data() + cut, 100 - cut);
      CHECK(dtl::detail::crc32c_extend(crc32c(a), std::span<const char>(b.data(), b.size())) ==
            reference_crc32c(std::string_view(data.data(), 100)));
    }
  }

  TEST_CASE("masked crc32c: TFRecord's rotate-and-add") {
    for (std::uint32_t c : {0u, 1u, 0x8000u, 0xE3069283u, 0xFFFFFFFFu, 0x12345678u}) {
      const std::uint32_t expected = static_cast<std::uint32_t>(((c >> 15) | (c << 17)) + 0xA282EAD8u);
      CHECK(dtl::detail::mask_crc32c(c) == expected);
    }
    CHECK(dtl::detail::mask_crc32c(0) == 0xA282EAD8u);
    CHECK(dtl::detail::masked_crc32c("123456789") == dtl::detail::mask_crc32c(0xE3069283u));
  }

  // ----- protobuf -----

  TEST_CASE("varint: edge cases") {
    using dtl::detail::varint_size;
    CHECK(varint(0) == bytes({0x00}));
    CHECK(varint(1) == bytes({0x01}));
    CHECK(varint(127) == bytes({0x7F}));
    CHECK(varint(128) == bytes({0x80, 0x01}));
    CHECK(varint(300) == bytes({0xAC, 0x02}));
    CHECK(varint(16383) == bytes({0xFF, 0x7F}));
    CHECK(varint(16384) == bytes({0x80, 0x80, 0x01}));
    CHECK(varint(0xFFFFFFFFu) == bytes({0xFF, 0xFF, 0xFF, 0xFF, 0x0F}));
    CHECK(varint(std::numeric_limits<std::uint64_t>::max()) ==
          bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
    // A negative int64 is its two's complement: always 10 bytes, as protobuf encodes it.
    CHECK(varint(static_cast<std::uint64_t>(std::int64_t{-1})) == varint(std::numeric_limits<std::uint64_t>::max()));
    CHECK(varint(static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::min())) ==
          bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}));
    for (std::uint64_t v : {0ULL, 127ULL, 128ULL, 16383ULL, 16384ULL, (1ULL << 35) - 1, 1ULL << 35, ~0ULL})
      CHECK(varint_size(v) == varint(v).size());
    static_assert(dtl::detail::varint_size(0) == 1 && dtl::detail::varint_size(~0ULL) == 10);
  }

  TEST_CASE("fixed-width fields are little-endian IEEE-754") {
    std::string out;
    dtl::detail::append_double_field(out, 1, 1.0);
    CHECK(out == bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F}));
    out.clear();
    dtl::detail::append_float_field(out, 2, 1.0f);
    CHECK(out == bytes({0x15, 0x00, 0x00, 0x80, 0x3F}));
    out.clear();
    dtl::detail::append_bytes_field(out, 3, "ab");
    CHECK(out == bytes({0x1A, 0x02, 'a', 'b'}));
  }

  TEST_CASE("encode_scalar_event: the exact bytes protobuf would produce") {
    // Event{step: 1, summary{value{tag: "a", simple_value: 1.0}}}; wall_time 0 is a proto3
    // default and left out.
    CHECK(hex(dtl::detail::encode_scalar_event(0.0, 1, "a", 1.0f)) ==
          hex(bytes({0x10, 0x01, 0x2A, 0x0A, 0x0A, 0x08, 0x0A, 0x01, 'a', 0x15, 0x00, 0x00, 0x80, 0x3F})));
    // Step 0 is left out too; simple_value 0 is not (it sits in a oneof).
    CHECK(hex(dtl::detail::encode_scalar_event(0.0, 0, "a", 0.0f)) ==
          hex(bytes({0x2A, 0x0A, 0x0A, 0x08, 0x0A, 0x01, 'a', 0x15, 0, 0, 0, 0})));
    // wall_time first (field 1, fixed64), then step (a 10-byte varint for -1).
    const std::string e = dtl::detail::encode_scalar_event(2.0, -1, "a", 1.0f);
    CHECK(hex(e.substr(0, 9)) == hex(bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0x40})));
    CHECK(hex(e.substr(9, 11)) == hex(bytes({0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01})));
    // A 200-byte tag needs 2-byte lengths at every level.
    const std::string tag(200, 't');
    const std::string big = dtl::detail::encode_scalar_event(0.0, 0, tag, 1.0f);
    // value = 1 + 2 + 200 + 5 = 208; summary = 1 + 2 + 208 = 211
    CHECK(hex(big.substr(0, 7)) == hex(bytes({0x2A, 0xD3, 0x01, 0x0A, 0xD0, 0x01, 0x0A})));
    CHECK(big.size() == 1 + 2 + 211);
  }

  TEST_CASE("encode_file_version_event and frame_record") {
    const std::string ev = dtl::detail::encode_file_version_event(1.5);
    CHECK(hex(ev) == hex(bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0x1A, 0x0D}) + "brain.Event:2"));
    const std::string rec = dtl::detail::frame_record(ev);
    REQUIRE(rec.size() == 8 + 4 + ev.size() + 4);
    CHECK(le64(rec, 0) == ev.size());
    CHECK(le32(rec, 8) == dtl::detail::mask_crc32c(reference_crc32c(rec.substr(0, 8))));
    CHECK(rec.substr(12, ev.size()) == ev);
    CHECK(le32(rec, 12 + ev.size()) == dtl::detail::mask_crc32c(reference_crc32c(ev)));
    // An empty payload is still a record: length 0 and the CRC of nothing.
    const std::string empty = dtl::detail::frame_record("");
    CHECK(empty.size() == 16);
    CHECK(le32(empty, 12) == dtl::detail::mask_crc32c(0));
  }

  // ----- tag convention -----

  TEST_CASE("Determined's tags: Determined/<name>, Determined/val_<name>") {
    using namespace dtl::tensorboard;  // NOLINT(google-build-using-namespace)
    CHECK(training_tag("loss") == "Determined/loss");
    CHECK(validation_tag("loss") == "Determined/val_loss");
    CHECK(validation_tag("accuracy") == "Determined/val_accuracy");
    // Determined tests name.startswith("val"): these keep their names.
    CHECK(validation_tag("val_loss") == "Determined/val_loss");
    CHECK(validation_tag("validation_error") == "Determined/validation_error");
    CHECK(validation_name("value") == "value");
  }

  // ----- files, checked by the independent decoder -----

  TEST_CASE("SummaryWriter: file name, first record, scalars read back by an independent decoder") {
    TempDir tmp;
    const fs::path dir = tmp.path / "tensorboard" / "nested";  // created by the writer
    fs::path file;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    {
      dtl::SummaryWriter w(dir);
      file = w.file_path();
      CHECK(w.get_logdir() == dir);
      w.add_scalar("Loss/train", 0.1, 0);
      w.add_scalar("Loss/train", -2.5, 1);
      w.add_scalar("lr", 1e-5, 300);
      w.add_scalar("big", 3.0e38, std::int64_t{1} << 40);
      w.add_scalar("nan", nan, 7);
      w.add_scalar("inf", -inf, 8);
      w.add_scalar("walltime", 1.0, 9, 1234.5);
      w.write_training_metrics({{"loss", 0.25}, {"accuracy", 0.75}}, 99);
      w.write_validation_metrics({{"loss", 0.5}, {"val_acc", 0.9}, {"validation_error", 0.1}}, 100);
      w.write_metrics("custom/", {{"x", 42.0}}, 5);
    }
    REQUIRE(fs::exists(file));
    CHECK(file.parent_path() == dir);
    // events.out.tfevents.<10-digit seconds>.<hostname>.<pid>.<uid>
    const std::string name = file.filename().string();
    REQUIRE(name.starts_with("events.out.tfevents."));
    const std::string secs = name.substr(20, 10);
    CHECK(secs.find_first_not_of("0123456789") == std::string::npos);
    CHECK(name[30] == '.');
    CHECK(std::abs(std::stod(secs) - dtl::detail::unix_seconds()) < 600);
    CHECK(name.find("." + dtl::detail::host_name() + "." + std::to_string(::getpid()) + ".") != std::string::npos);

    if (!have_python()) {
      MESSAGE(no_python_note());
      return;
    }
    const Decoded d = decode(file);
    INFO(d.output);
    REQUIRE(d.status == 0);
    REQUIRE(d.events.size() == 1 + 7 + 2 + 3 + 1);
    CHECK(d.events[0]["file_version"] == "brain.Event:2");
    CHECK(d.events[0]["step"] == 0);
    CHECK(std::abs(d.events[0]["wall_time"].get<double>() - dtl::detail::unix_seconds()) < 600);

    struct Expected {
      std::string tag;
      std::int64_t step;
      double value;
    };
    const std::vector<Expected> expected{
        {"Loss/train", 0, 0.1},
        {"Loss/train", 1, -2.5},
        {"lr", 300, 1e-5},
        {"big", std::int64_t{1} << 40, 3.0e38},
        {"nan", 7, nan},
        {"inf", 8, -inf},
        {"walltime", 9, 1.0},
        {"Determined/loss", 99, 0.25},
        {"Determined/accuracy", 99, 0.75},
        {"Determined/val_loss", 100, 0.5},
        {"Determined/val_acc", 100, 0.9},
        {"Determined/validation_error", 100, 0.1},
        {"custom/x", 5, 42.0},
    };
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const json& e = d.events[i + 1];
      const Expected& x = expected[i];
      CAPTURE(e.dump());
      CHECK(e["tag"] == x.tag);
      CHECK(e["step"].get<std::int64_t>() == x.step);
      if (std::isnan(x.value)) {
        CHECK(e["simple_value"] == "nan");
      } else if (std::isinf(x.value)) {
        CHECK(e["simple_value"] == (x.value > 0 ? "inf" : "-inf"));
      } else {
        CHECK(e["simple_value"].get<double>() == as_float32(x.value));  // exact: float32 round trip
      }
      if (x.tag == "walltime") CHECK(e["wall_time"].get<double>() == 1234.5);
    }
  }

  TEST_CASE("TensorBoard's own reader (its EventAccumulator) reads dtl's event files") {
    if (const auto why = event_accumulator_missing()) {
      MESSAGE(*why);
      return;
    }
    TempDir tmp;
    const fs::path dir = tmp.path / "tb";
    {
      dtl::SummaryWriter w(dir);
      w.write_training_metrics({{"loss", 0.25}, {"accuracy", 0.75}}, 10);
      w.write_training_metrics({{"loss", 0.125}}, 20);
      w.write_validation_metrics({{"validation_loss", 0.5}, {"val_acc", 0.9}}, 20);
      w.add_scalar("lr", 1e-5, 300);
      w.add_scalar("nan", std::numeric_limits<double>::quiet_NaN(), 7);
    }
    const auto read = read_with_event_accumulator(
        dir,
        "out = {t: [[e.step, 'nan' if math.isnan(e.value) else e.value] for e in acc.Scalars(t)]\n"
        "       for t in acc.Tags()['scalars']}\n"
        "print(json.dumps(out, sort_keys=True))");
    const json expected = {{"Determined/accuracy", {{10, as_float32(0.75)}}},
                           {"Determined/loss", {{10, as_float32(0.25)}, {20, as_float32(0.125)}}},
                           {"Determined/val_acc", {{20, as_float32(0.9)}}},
                           {"Determined/validation_loss", {{20, as_float32(0.5)}}},
                           {"lr", {{300, as_float32(1e-5)}}},
                           {"nan", {{7, "nan"}}}};
    CHECK(read == expected);
  }

  TEST_CASE("purge_step: TensorBoard's reader drops the earlier files' events from that step on") {
    if (const auto why = event_accumulator_missing()) {
      MESSAGE(*why);
      return;
    }
    TempDir tmp;
    const fs::path dir = tmp.path / "tb";
    {  // the interrupted run: steps 1..6, its last checkpoint at 3
      dtl::SummaryWriter w(dir);
      for (int step = 1; step <= 6; ++step) w.add_scalar("Determined/loss", step, step);
    }
    // The resumed run's file sorts after it (event file names start with the second).
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    {
      dtl::SummaryWriter w(dir);
      w.purge_step(4);
      for (int step = 4; step <= 6; ++step) w.add_scalar("Determined/loss", 10 * step, step);
    }
    const auto read =
        read_with_event_accumulator(dir, "print(json.dumps([[e.step, e.value] for e in acc.Scalars('Determined/loss')]))");
    CHECK(read == json{{1, 1.0}, {2, 2.0}, {3, 3.0}, {4, 40.0}, {5, 50.0}, {6, 60.0}});  // each step once
  }

  TEST_CASE("the decoder rejects a corrupted byte anywhere, and a truncated file") {
    if (!have_python()) {
      MESSAGE(no_python_note());
      return;
    }
    TempDir tmp;
    fs::path file;
    {
      dtl::SummaryWriter w(tmp.path);
      file = w.file_path();
      w.add_scalar("Determined/loss", 0.5, 10);
    }
    const std::string good = read_file(file);
    REQUIRE(decode(file).status == 0);
    const std::size_t first = 12 + le64(good, 0) + 4;  // second record starts here
    REQUIRE(first < good.size());
    const fs::path bad = tmp.path / "corrupt.tfevents";
    // A byte in each part of each record: length, length CRC, data, data CRC.
    for (std::size_t at : {std::size_t{0}, std::size_t{9}, std::size_t{14}, first - 1, first + 3, first + 10,
                           first + 20, good.size() - 1}) {
      std::string data = good;
      data[at] = static_cast<char>(data[at] ^ 0x01);
      write_file(bad, data);
      const Decoded d = decode(bad);
      CAPTURE(at);
      CAPTURE(d.output);
      CHECK(d.status == 1);
      CHECK(d.output.find("mismatch") != std::string::npos);
    }
    write_file(bad, good.substr(0, good.size() - 1));
    CHECK(decode(bad).status == 1);
    write_file(bad, good + std::string(3, '\0'));
    CHECK(decode(bad).status == 1);
  }

  TEST_CASE("SummaryWriter: records are buffered until flush, max_queue or destruction") {
    TempDir tmp;
    fs::path file;
    std::uintmax_t header = 0;
    {
      dtl::SummaryWriter w(tmp.path, {.max_queue = 5, .flush_secs = 3600});
      file = w.file_path();
      header = fs::file_size(file);  // the file_version record, written at once
      CHECK(header > 0);
      for (int i = 0; i < 4; ++i) w.add_scalar("x", i, i);
      CHECK(fs::file_size(file) == header);  // 4 < max_queue: nothing written yet
      w.add_scalar("x", 4, 4);               // the 5th record writes the queue
      const auto after_five = fs::file_size(file);
      CHECK(after_five > header);
      w.add_scalar("x", 5, 5);
      CHECK(fs::file_size(file) == after_five);
      w.flush();
      CHECK(fs::file_size(file) > after_five);
      w.add_scalar("x", 6, 6);
      w.add_scalar("x", 7, 7);
    }  // destruction flushes the last two
    if (have_python()) {
      const Decoded d = decode(file);
      INFO(d.output);
      REQUIRE(d.status == 0);
      REQUIRE(d.events.size() == 9);
      for (int i = 0; i < 8; ++i) {
        CHECK(d.events[static_cast<std::size_t>(i + 1)]["step"] == i);
        CHECK(d.events[static_cast<std::size_t>(i + 1)]["simple_value"] == i);
      }
    } else {
      MESSAGE(no_python_note());
    }

    // flush_secs = 0: every add is written at once.
    dtl::SummaryWriter w(tmp.path, {.flush_secs = 0});
    const auto size0 = fs::file_size(w.file_path());
    w.add_scalar("y", 1.0, 1);
    CHECK(fs::file_size(w.file_path()) > size0);
  }

  TEST_CASE("SummaryWriter: two writers in one directory get distinct files") {
    TempDir tmp;
    dtl::SummaryWriter a(tmp.path), b(tmp.path);
    CHECK(a.file_path() != b.file_path());
    a.add_scalar("a", 1.0, 1);
    b.add_scalar("b", 2.0, 2);
    a.flush();
    b.flush();
    CHECK(event_files(tmp.path).size() == 2);
    if (have_python()) {
      const Decoded da = decode(a.file_path()), db = decode(b.file_path());
      REQUIRE(da.status == 0);
      REQUIRE(db.status == 0);
      REQUIRE(da.events.size() == 2);
      REQUIRE(db.events.size() == 2);
      CHECK(da.events[1]["tag"] == "a");
      CHECK(db.events[1]["tag"] == "b");
    }
  }

  TEST_CASE("SummaryWriter: moving keeps one file; the moved-from writer writes nothing") {
    TempDir tmp;
    dtl::SummaryWriter a(tmp.path);
    a.add_scalar("before", 1.0, 1);
    dtl::SummaryWriter b(std::move(a));
    b.add_scalar("after", 2.0, 2);
    dtl::SummaryWriter c(tmp.path / "other");
    c = std::move(b);  // closes c's own file first
    c.add_scalar("assigned", 3.0, 3);
    const fs::path file = c.file_path();
    c.close();
    CHECK(event_files(tmp.path).size() == 1);
    CHECK(event_files(tmp.path / "other").size() == 1);
    if (have_python()) {
      const Decoded d = decode(file);
      REQUIRE(d.status == 0);
      REQUIRE(d.events.size() == 4);
      CHECK(d.events[1]["tag"] == "before");
      CHECK(d.events[2]["tag"] == "after");
      CHECK(d.events[3]["tag"] == "assigned");
    }
  }

  TEST_CASE("SummaryWriter::add_scalars: one run per tag, all under main_tag (torch's layout)") {
    TempDir tmp;
    {
      dtl::SummaryWriter w(tmp.path);
      w.add_scalars("loss/all", {{"train", 0.3}, {"val", 0.4}}, 10);
      w.add_scalars("loss/all", {{"train", 0.2}, {"val", 0.35}}, 20);
    }
    for (const auto& [run, values] : std::vector<std::pair<std::string, std::vector<double>>>{
             {"loss_all_train", {0.3, 0.2}}, {"loss_all_val", {0.4, 0.35}}}) {
      const auto files = event_files(tmp.path / run);
      REQUIRE(files.size() == 1);
      if (!have_python()) continue;
      const Decoded d = decode(files[0]);
      REQUIRE(d.status == 0);
      REQUIRE(d.events.size() == 3);
      CHECK(d.events[1]["tag"] == "loss/all");
      CHECK(d.events[1]["step"] == 10);
      CHECK(d.events[1]["simple_value"].get<double>() == as_float32(values[0]));
      CHECK(d.events[2]["step"] == 20);
      CHECK(d.events[2]["simple_value"].get<double>() == as_float32(values[1]));
    }
  }

  TEST_CASE("BatchMetricWriter: Determined's steps for batch, averaged and validation metrics") {
    TempDir tmp;
    fs::path file;
    {
      dtl::SummaryWriter sw(tmp.path);
      dtl::BatchMetricWriter tb(sw);
      file = tb.writer().file_path();
      // A workload of 4 batches ending at steps_completed = 10: batches 6..9.
      std::vector<dtl::ScalarMetrics> batches;
      for (int i = 0; i < 4; ++i) batches.push_back({{"loss", 1.0 + i}});
      tb.on_train_step_end(10, {{"loss", 2.5}, {"custom", 7.0}}, batches);
      const auto flushed = fs::file_size(file);
      tb.on_validation_step_end(10, {{"loss", 0.5}, {"val_acc", 0.8}});
      CHECK(fs::file_size(file) > flushed);  // each report is flushed, as Determined does
    }
    if (!have_python()) {
      MESSAGE(no_python_note());
      return;
    }
    const Decoded d = decode(file);
    INFO(d.output);
    REQUIRE(d.status == 0);
    REQUIRE(d.events.size() == 1 + 4 + 1 + 2);
    for (int i = 0; i < 4; ++i) {
      const json& e = d.events[static_cast<std::size_t>(1 + i)];
      CHECK(e["tag"] == "Determined/loss");
      CHECK(e["step"] == 6 + i);
      CHECK(e["simple_value"] == 1.0 + i);
    }
    // The average of a metric the batches reported is not written again; one they did not is,
    // at steps_completed.
    CHECK(d.events[5]["tag"] == "Determined/custom");
    CHECK(d.events[5]["step"] == 10);
    CHECK(d.events[6]["tag"] == "Determined/val_loss");
    CHECK(d.events[6]["step"] == 10);
    CHECK(d.events[7]["tag"] == "Determined/val_acc");
    CHECK(d.events[7]["simple_value"].get<double>() == as_float32(0.8));
  }

  TEST_CASE("SummaryWriter: an unusable log directory is a TensorBoardError naming it") {
    TempDir tmp;
    write_file(tmp.path / "plain_file", "x");
    const fs::path dir = tmp.path / "plain_file" / "tensorboard";
    std::string message;
    try {
      dtl::SummaryWriter w(dir);
    } catch (const dtl::TensorBoardError& e) {
      message = e.what();
    }
    CHECK(message.find(dir.string()) != std::string::npos);
    CHECK(message.starts_with("dtl: cannot create TensorBoard log directory"));
    // It is a std::runtime_error, as every run-time failure dtl reports.
    CHECK_THROWS_AS(dtl::SummaryWriter{dir}, std::runtime_error);
  }

}  // TEST_SUITE
