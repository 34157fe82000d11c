// dtl — TensorBoard event files, written as Determined writes them (TorchWriter, whose `.writer`
// is torch.utils.tensorboard's SummaryWriter, fed by determined.tensorboard.BatchMetricWriter).
//
// Torch-free and dependency-free on purpose: there is no TensorBoard, TensorFlow or protobuf in
// Debian, and the few fields a scalar needs are easy to encode by hand. An event file is a
// sequence of TFRecords (u64 LE length, masked CRC32C of the length bytes, data, masked CRC32C of
// the data), each an `Event` protobuf; the first one carries `file_version: "brain.Event:2"`.
#ifndef DTL_LOG_TENSORBOARD_HPP
#define DTL_LOG_TENSORBOARD_HPP

#include <dtl/detail/compiled_lib.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace dtl {
inline namespace DTL_ABI {

/// A TensorBoard event file could not be created or written. The message names the file (or
/// directory) and the system's reason, e.g.
/// `dtl: cannot write TensorBoard event file runs/x/tensorboard/events.out...: No space left on device`.
struct TensorBoardError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

// ---------------------------------------------------------------------------------------------
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord framing requires.
// Slicing-by-8: a scalar record is ~40-60 bytes and its checksum is about a third of add_scalar's
// encoding cost, so eight bytes go through eight independent table lookups at a time instead of
// one dependent lookup per byte. The tables are built at compile time.

inline constexpr std::uint32_t crc32c_polynomial = 0x82F63B78u;

constexpr std::array<std::array<std::uint32_t, 256>, 8> make_crc32c_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ crc32c_polynomial : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t s = 1; s < 8; ++s)
    for (std::size_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
  return t;
}

inline constexpr auto crc32c_tables = make_crc32c_tables();

/// Continues a CRC32C over more bytes: `crc32c_extend(crc32c(a), b) == crc32c(a + b)`.
/// Works on `char`, `unsigned char` and `std::byte` spans, and in constant expressions:
/// `static_assert(crc32c_extend(0, std::span<const char>("a", 1)) == crc32c("a"));`
template <class Byte>
requires(sizeof(Byte) == 1) constexpr std::uint32_t crc32c_extend(std::uint32_t crc, std::span<const Byte> data) {
  const auto& t = crc32c_tables;
  const auto at = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<std::uint8_t>(data[i])); };
  std::uint32_t c = ~crc;
  std::size_t i = 0;
  const std::size_t n = data.size();
  for (; i + 8 <= n; i += 8) {
    const std::uint32_t lo = c ^ (at(i) | at(i + 1) << 8 | at(i + 2) << 16 | at(i + 3) << 24);
    const std::uint32_t hi = at(i + 4) | at(i + 5) << 8 | at(i + 6) << 16 | at(i + 7) << 24;
    c = t[7][lo & 0xFFu] ^ t[6][(lo >> 8) & 0xFFu] ^ t[5][(lo >> 16) & 0xFFu] ^ t[4][lo >> 24] ^ t[3][hi & 0xFFu] ^
        t[2][(hi >> 8) & 0xFFu] ^ t[1][(hi >> 16) & 0xFFu] ^ t[0][hi >> 24];
  }
  for (; i < n; ++i) c = t[0][(c ^ at(i)) & 0xFFu] ^ (c >> 8);
  return ~c;
}

/// CRC32C of raw bytes: `crc32c(std::as_bytes(std::span(buf)))`.
constexpr std::uint32_t crc32c(std::span<const std::byte> data) { return crc32c_extend<std::byte>(0, data); }

/// CRC32C of a string's bytes: `crc32c("123456789") == 0xE3069283`.
constexpr std::uint32_t crc32c(std::string_view data) {
  return crc32c_extend<char>(0, std::span<const char>(data.data(), data.size()));
}

/// TFRecord's checksum mask. A CRC stored next to the data it covers is weak against data that
/// itself contains CRCs (TFRecords of TFRecords); rotating and adding a constant breaks that.
/// `mask_crc32c(c) == ((c >> 15) | (c << 17)) + 0xa282ead8`.
constexpr std::uint32_t mask_crc32c(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

/// The masked CRC32C TFRecord stores: `masked_crc32c(data) == mask_crc32c(crc32c(data))`.
constexpr std::uint32_t masked_crc32c(std::string_view data) { return mask_crc32c(crc32c(data)); }

// ---------------------------------------------------------------------------------------------
// Protobuf wire format: only what Event/Summary/Value need. Fields are written in field-number
// order and proto3 defaults (0, empty) are left out, as protobuf's own serializer does, so the
// bytes match what TensorBoard's Python writer produces for the same event.
//
// The `put_*` functions write at a raw pointer and return the end. The per-scalar path sizes its
// whole record first and fills it in place: appending byte by byte to a std::string re-checks
// capacity and reloads the size at every byte (a char store may alias the string object), which
// costs more than the encoding itself. The `append_*` functions are the convenient forms.

/// Protobuf wire types.
enum class WireType : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

/// Bytes a base-128 varint of `v` takes (1..10): `varint_size(300) == 2`.
constexpr std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80u) {
    v >>= 7;
    ++n;
  }
  return n;
}

/// Writes `v` as a varint at `p` (up to 10 bytes) and returns the end. A negative int64 is cast
/// to uint64 first and takes 10 bytes, as in protobuf.
constexpr char* put_varint(char* p, std::uint64_t v) {
  while (v >= 0x80u) {
    *p++ = static_cast<char>((v & 0x7Fu) | 0x80u);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

/// Writes `v` little-endian in 4 bytes at `p` (wire type fixed32) and returns the end.
constexpr char* put_fixed32(char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) *p++ = static_cast<char>((v >> (8 * i)) & 0xFFu);
  return p;
}

/// Writes `v` little-endian in 8 bytes at `p` (wire type fixed64, and TFRecord's length).
constexpr char* put_fixed64(char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>((v >> (8 * i)) & 0xFFu);
  return p;
}

/// Writes a field key (`field << 3 | wire type`) at `p`.
constexpr char* put_key(char* p, std::uint32_t field, WireType type) {
  return put_varint(p, (std::uint64_t{field} << 3) | static_cast<std::uint8_t>(type));
}

/// Copies `s` to `p`.
DTL_INLINE char* put_bytes(char* p, std::string_view s);

/// Appends `v` as a varint: `append_varint(out, 300)` appends `AC 02`.
DTL_INLINE void append_varint(std::string& out, std::uint64_t v);

/// Appends `v` little-endian in 4 bytes.
DTL_INLINE void append_fixed32(std::string& out, std::uint32_t v);

/// Appends `v` little-endian in 8 bytes.
DTL_INLINE void append_fixed64(std::string& out, std::uint64_t v);

/// Appends a field key: `append_key(out, 2, WireType::fixed32)` appends `15`.
DTL_INLINE void append_key(std::string& out, std::uint32_t field, WireType type);

/// Appends a `double` field (fixed64): `append_double_field(out, 1, 1.0)` appends `09 00..00 F0 3F`.
DTL_INLINE void append_double_field(std::string& out, std::uint32_t field, double v);

/// Appends a `float` field (fixed32): `append_float_field(out, 2, 1.0f)` appends `15 00 00 80 3F`.
DTL_INLINE void append_float_field(std::string& out, std::uint32_t field, float v);

/// Appends an `int64`/`uint64` field (varint).
DTL_INLINE void append_varint_field(std::string& out, std::uint32_t field, std::uint64_t v);

/// Appends a `string`/`bytes`/sub-message field whose content is `bytes`.
DTL_INLINE void append_bytes_field(std::string& out, std::uint32_t field, std::string_view bytes);

// Field numbers of tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto.
inline constexpr std::uint32_t event_wall_time = 1;     // double
inline constexpr std::uint32_t event_step = 2;          // int64
inline constexpr std::uint32_t event_file_version = 3;  // string
inline constexpr std::uint32_t event_summary = 5;       // Summary
inline constexpr std::uint32_t event_session_log = 7;   // SessionLog
inline constexpr std::uint32_t session_log_status = 1;  // enum SessionStatus
inline constexpr std::uint64_t session_log_start = 1;   // SessionStatus.START
inline constexpr std::uint32_t summary_value = 1;       // repeated Summary.Value
inline constexpr std::uint32_t value_tag = 1;           // string
inline constexpr std::uint32_t value_simple_value = 2;  // float (in a oneof: written even when 0)

/// The version string TensorFlow and torch.utils.tensorboard put in every event file's first record.
inline constexpr std::string_view event_file_version_string = "brain.Event:2";

/// Size of the serialized scalar Event whose tag has `tag_size` bytes.
constexpr std::size_t scalar_event_size(double wall_time, std::int64_t step, std::size_t tag_size) {
  // All keys here are one byte (field numbers < 16).
  const std::size_t value_size = (tag_size ? 1 + varint_size(tag_size) + tag_size : 0) + 1 + 4;
  const std::size_t summary_size = 1 + varint_size(value_size) + value_size;
  return (wall_time != 0.0 ? 1 + 8 : 0) + (step != 0 ? 1 + varint_size(static_cast<std::uint64_t>(step)) : 0) + 1 +
         varint_size(summary_size) + summary_size;
}

/// Writes `Event{wall_time, step, summary{value{tag: tag_prefix + tag_name, simple_value}}}` at `p`
/// (exactly `scalar_event_size(...)` bytes) and returns the end. The tag comes in two parts so
/// that `Determined/` + name needs no temporary string.
DTL_INLINE char* put_scalar_event(char* p, double wall_time, std::int64_t step, std::string_view tag_prefix,
                                  std::string_view tag_name, float value);

/// The serialized `Event` of one scalar, e.g. `encode_scalar_event(1.7e9, 100, "Determined/loss", 0.25f)`.
DTL_INLINE std::string encode_scalar_event(double wall_time, std::int64_t step, std::string_view tag, float value);

/// The serialized `Event{wall_time, file_version}` every event file starts with:
/// `encode_file_version_event(now)` carries `"brain.Event:2"`.
DTL_INLINE std::string encode_file_version_event(double wall_time,
                                                 std::string_view file_version = event_file_version_string);

/// The serialized `Event{wall_time, step, session_log{status: START}}`: TensorBoard's reader
/// then drops every event of the directory's earlier files at `step` or later (torch's
/// `SummaryWriter(purge_step=step)` writes the same).
DTL_INLINE std::string encode_session_start_event(double wall_time, std::int64_t step);

// TFRecord framing: [u64 LE length][masked crc32c of those 8 bytes][data][masked crc32c of data].
inline constexpr std::size_t record_header_size = 12;
inline constexpr std::size_t record_footer_size = 4;

/// Fills in the header and footer of a record whose `length` data bytes are already at `p + 12`.
DTL_INLINE void seal_record(char* p, std::size_t length);

/// Appends one TFRecord around `payload`.
DTL_INLINE void append_record(std::string& out, std::string_view payload);

/// One TFRecord around `payload`: u64 LE length, masked CRC32C of those 8 bytes, the payload,
/// masked CRC32C of the payload. `frame_record(encode_file_version_event(t))` is a file's first record.
DTL_INLINE std::string frame_record(std::string_view payload);

/// Appends the TFRecord of one scalar Event (tag `tag_prefix + tag_name`), encoded in place:
/// one resize, no temporary. This is SummaryWriter::add_scalar's whole encoding cost.
DTL_INLINE void append_scalar_record(std::string& out, double wall_time, std::int64_t step, std::string_view tag_prefix,
                                     std::string_view tag_name, float value);

// ---------------------------------------------------------------------------------------------
// File naming and I/O.

/// Seconds since the Unix epoch, as TensorBoard's `time.time()`.
DTL_INLINE double unix_seconds();

/// This machine's name, for event file names (TensorBoard's `socket.gethostname()`).
DTL_INLINE std::string host_name();

/// Per-process writer counter, torch.utils.tensorboard's `_global_uid`: two writers created in the
/// same second by the same process still get distinct file names.
inline std::atomic<std::uint64_t> event_file_uid{0};

/// `events.out.tfevents.<unix seconds, 10 digits>.<hostname>.<pid>.<uid><suffix>`, torch's format.
DTL_INLINE std::string event_file_name(double wall_time, std::uint64_t uid, std::string_view suffix);

/// The system's text for an errno value: `errno_text(ENOSPC) == "No space left on device"`.
inline std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

/// Metric name/value pairs, in report order: `{{"loss", 0.25}, {"accuracy", 0.9}}`.
using ScalarMetrics = std::vector<std::pair<std::string, double>>;

/// Determined's TensorBoard tag convention (determined/tensorboard/metric_writers/callback.py,
/// BatchMetricWriter): every metric goes under the `Determined/` section; validation metrics get a
/// `val_` prefix unless their name already starts with "val".
namespace tensorboard {

/// The section Determined puts every metric in.
inline constexpr std::string_view tag_prefix = "Determined/";

/// The tag of a training metric: `training_tag("loss") == "Determined/loss"`.
DTL_INLINE std::string training_tag(std::string_view metric);

/// The metric name a validation metric is written under: `"loss"` -> `"val_loss"`, but
/// `"validation_loss"` and `"val_acc"` stay as they are (Determined tests `startswith("val")`).
DTL_INLINE std::string validation_name(std::string_view metric);

/// The tag of a validation metric: `validation_tag("accuracy") == "Determined/val_accuracy"`.
inline std::string validation_tag(std::string_view metric) { return training_tag(validation_name(metric)); }

}  // namespace tensorboard

/// Options of a SummaryWriter. The defaults flush at least every 1000 scalars and every 2 minutes
/// (torch's `flush_secs=120`); torch's `max_queue=10` would cost a write(2) every 10 scalars.
/// `SummaryWriter w("runs/x/tensorboard", {.max_queue = 100, .flush_secs = 5});`
struct SummaryWriterOptions {
  std::size_t max_queue = 1000;      ///< records buffered before they are written
  double flush_secs = 120.0;         ///< longest time a buffered record waits (checked on add)
  std::string filename_suffix = {};  ///< appended to the file name, as torch's `filename_suffix`
};

/// A TensorBoard event-file writer: the C++ counterpart of `torch.utils.tensorboard.SummaryWriter`,
/// which is what Determined's `TorchWriter().writer` is.
///
/// Creates `log_dir` if missing and opens a new `events.out.tfevents.<secs>.<host>.<pid>.<uid>`
/// in it, whose first record is `file_version: "brain.Event:2"`. Records are buffered in memory:
/// `add_scalar` encodes into the buffer and makes no system call; the buffer is written on
/// `flush()`, `close()`, destruction, and after `max_queue` records or `flush_secs` seconds.
/// Failing to create or write the file throws TensorBoardError naming it.
///
/// ```cpp
/// dtl::SummaryWriter writer(run_dir / "tensorboard");
/// for (std::int64_t step = 0; step < 100; ++step) writer.add_scalar("loss", 1.0 / (step + 1), step);
/// writer.flush();  // visible to `tensorboard --logdir` now
/// ```
class SummaryWriter {
 public:
  /// Opens a new event file in `log_dir` (created if missing).
  DTL_INLINE explicit SummaryWriter(std::filesystem::path log_dir, SummaryWriterOptions options = {});

  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  /// Moves the open file; the moved-from writer is closed and writes nothing.
  DTL_INLINE SummaryWriter(SummaryWriter&& other) noexcept;

  /// Closes this writer's file (flushing it) and takes over `other`'s.
  SummaryWriter& operator=(SummaryWriter&& other) noexcept {
    if (this != &other) {
      close_quietly();
      log_dir_ = std::move(other.log_dir_);
      path_ = std::move(other.path_);
      options_ = std::move(other.options_);
      fd_ = std::exchange(other.fd_, -1);
      buffer_ = std::move(other.buffer_);
      other.buffer_.clear();
      queued_ = std::exchange(other.queued_, 0);
      last_flush_ = other.last_flush_;
      children_ = std::move(other.children_);
    }
    return *this;
  }

  /// Flushes and closes; an error here is printed to stderr (a destructor cannot throw). Call
  /// `close()` first to get it as an exception.
  ~SummaryWriter() { close_quietly(); }

  /// Adds a scalar at `global_step`: `writer.add_scalar("Loss/train", 0.25, 100)`. The value is
  /// stored as a float32 (TensorBoard's `simple_value`); `walltime` defaults to now.
  void add_scalar(std::string_view tag, double scalar_value, std::int64_t global_step = 0,
                  std::optional<double> walltime = std::nullopt) {
    const double now = detail::unix_seconds();
    add_scalar_parts({}, tag, scalar_value, global_step, walltime.value_or(now), now);
  }

  /// Several scalars on one chart, as torch's `add_scalars`: each `tag` is written as `main_tag`
  /// into its own run, the subdirectory `<log_dir>/<main_tag with '/' as '_'>_<tag>`.
  /// `writer.add_scalars("loss", {{"train", 0.3}, {"val", 0.4}}, 100)` shows two lines on chart "loss".
  void add_scalars(std::string_view main_tag, const std::map<std::string, double>& tag_scalar_dict,
                   std::int64_t global_step = 0, std::optional<double> walltime = std::nullopt) {
    const double now = detail::unix_seconds();
    std::string run(main_tag);
    for (char& ch : run)
      if (ch == '/') ch = '_';
    for (const auto& [tag, value] : tag_scalar_dict) {
      const std::string dir = run + "_" + tag;
      auto it = children_.find(dir);
      if (it == children_.end())
        it = children_.emplace(dir, std::make_unique<SummaryWriter>(log_dir_ / dir, options_)).first;
      it->second->add_scalar_parts({}, main_tag, value, global_step, walltime.value_or(now), now);
    }
  }

  /// Writes each metric as the scalar `prefix + name` at `step`:
  /// `writer.write_metrics("Determined/", {{"loss", 0.25}}, 100)` writes tag `Determined/loss`.
  /// `values[i]` as `<prefix><name>` at step `first_step + i` (one clock read for all).
  void write_column(std::string_view prefix, std::string_view name, std::span<const double> values,
                    std::int64_t first_step) {
    const double now = detail::unix_seconds();
    for (std::size_t i = 0; i < values.size(); ++i)
      add_scalar_parts(prefix, name, values[i], first_step + static_cast<std::int64_t>(i), now, now);
  }

  void write_metrics(std::string_view prefix, const ScalarMetrics& metrics, std::int64_t step) {
    const double now = detail::unix_seconds();
    for (const auto& [name, value] : metrics) add_scalar_parts(prefix, name, value, step, now, now);
  }

  /// Training metrics under Determined's tags (`Determined/<name>`) at `step`. Determined writes a
  /// batch's metrics at the number of batches trained before it (the first batch at step 0) and
  /// workload averages at `steps_completed`. `writer.write_training_metrics({{"loss", 0.25}}, 99)`.
  void write_training_metrics(const ScalarMetrics& metrics, std::int64_t step) {
    write_metrics(tensorboard::tag_prefix, metrics, step);
  }

  /// Validation metrics under Determined's tags (`Determined/val_<name>`, or `Determined/<name>`
  /// when the name starts with "val") at `step` = steps_completed.
  /// `writer.write_validation_metrics({{"accuracy", 0.87}}, 300)` writes `Determined/val_accuracy`.
  void write_validation_metrics(const ScalarMetrics& metrics, std::int64_t step) {
    const double now = detail::unix_seconds();
    for (const auto& [name, value] : metrics)  // tensorboard::validation_tag without its string
      add_scalar_parts(name.starts_with("val") ? tensorboard::tag_prefix : val_prefix, name, value, step, now, now);
  }

  /// TensorBoard drops, from this log directory's earlier event files, every event at `step` or
  /// later, as after torch's `SummaryWriter(purge_step=step)`. A resumed run calls it with the first
  /// step it writes again, so that each step shows once. Flushed at once.
  void purge_step(std::int64_t step) {
    if (fd_ < 0) return;
    detail::append_record(buffer_, detail::encode_session_start_event(detail::unix_seconds(), step));
    flush();
  }

  /// Writes every buffered record (this writer's and its add_scalars runs') to disk.
  /// Throws TensorBoardError naming the file when the write fails.
  void flush() {
    for (auto& [dir, child] : children_) child->flush();
    if (fd_ < 0) {
      buffer_.clear();
      queued_ = 0;
      return;
    }
    std::size_t done = 0;
    while (done < buffer_.size()) {
      const ::ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        // Keep what was not written: a later flush retries it without duplicating records.
        buffer_.erase(0, done);
        throw TensorBoardError("dtl: cannot write TensorBoard event file " + path_.string() + ": " +
                               detail::errno_text(err));
      }
      done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
    queued_ = 0;
    last_flush_ = detail::unix_seconds();
  }

  /// Flushes and closes the file; later adds are dropped. Throws TensorBoardError on failure.
  void close() {
    flush();
    for (auto& [dir, child] : children_) child->close();
    if (fd_ >= 0) {
      const int fd = std::exchange(fd_, -1);
      if (::close(fd) != 0)
        throw TensorBoardError("dtl: cannot close TensorBoard event file " + path_.string() + ": " +
                               detail::errno_text(errno));
    }
  }

  /// The directory given at construction (torch's `get_logdir()`).
  [[nodiscard]] const std::filesystem::path& get_logdir() const noexcept { return log_dir_; }

  /// The event file this writer appends to.
  [[nodiscard]] const std::filesystem::path& file_path() const noexcept { return path_; }

 private:
  static constexpr std::string_view val_prefix = "Determined/val_";

  // The per-scalar path: encode into the buffer and write once per max_queue records. `now` is
  // read once per call by the public functions (a vDSO clock read, no system call) and serves
  // both as the default wall_time and for the flush deadline.
  DTL_INLINE void add_scalar_parts(std::string_view prefix, std::string_view name, double value, std::int64_t step,
                                   double wall_time, double now);

  DTL_INLINE void close_quietly() noexcept;

  std::filesystem::path log_dir_;
  std::filesystem::path path_;
  SummaryWriterOptions options_;
  int fd_ = -1;
  std::string buffer_;
  std::size_t queued_ = 0;
  double last_flush_ = 0.0;
  // add_scalars' runs, one writer per subdirectory; unique_ptr keeps SummaryWriter movable while
  // its own type is still incomplete here.
  std::map<std::string, std::unique_ptr<SummaryWriter>, std::less<>> children_;
};

/// Determined's BatchMetricWriter: how a trial's reported metrics become TensorBoard scalars.
/// Owns the SummaryWriter (Determined wraps a TorchWriter the same way) and flushes after each
/// report, as Determined does.
///
/// ```cpp
/// dtl::BatchMetricWriter tb(dtl::SummaryWriter(run_dir / "tensorboard"));
/// tb.on_train_step_end(100, avg_metrics, batch_metrics);   // Determined/loss at steps 0..99
/// tb.on_validation_step_end(100, {{"accuracy", 0.87}});    // Determined/val_accuracy at step 100
/// ```
class BatchMetricWriter {
 public:
  /// Writes through `writer`, which must outlive it (the trainer shares the context's writer, so
  /// the user's own scalars land in the same file).
  explicit BatchMetricWriter(SummaryWriter& writer) noexcept : writer_(&writer) {}

  /// End of a training workload that ended at `steps_completed` batches. Batch `i` of the
  /// `batch_metrics.size()` batches is written at step `steps_completed - size + i`; a metric of
  /// `metrics` that no batch reported (a custom reducer's) at `steps_completed`. Then flushes.
  DTL_INLINE void on_train_step_end(std::int64_t steps_completed, const ScalarMetrics& metrics,
                                    const std::vector<ScalarMetrics>& batch_metrics = {});

  /// The same from columns: `columns[k][i]` is metric `names[k]` of batch i. No per-batch
  /// containers are built: one clock read, then each value is encoded straight into the buffer.
  DTL_INLINE void on_train_step_end(std::int64_t steps_completed, const ScalarMetrics& metrics,
                                    std::span<const std::string_view> names,
                                    std::span<const std::vector<double>> columns);

  /// End of a validation at `steps_completed` batches: `Determined/val_<name>` (names starting
  /// with "val" unchanged) at `steps_completed`. Then flushes.
  DTL_INLINE void on_validation_step_end(std::int64_t steps_completed, const ScalarMetrics& metrics);

  /// The underlying writer, for scalars of your own (Determined's `TorchWriter().writer`).
  SummaryWriter& writer() noexcept { return *writer_; }

 private:
  SummaryWriter* writer_;
};

}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/log/tensorboard-inl.hpp>
#endif

#endif  // DTL_LOG_TENSORBOARD_HPP
