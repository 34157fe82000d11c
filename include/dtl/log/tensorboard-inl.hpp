// dtl — the non-template definitions of <dtl/log/tensorboard.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LOG_TENSORBOARD_INL_HPP
#define DTL_LOG_TENSORBOARD_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/log/tensorboard.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE char* put_bytes(char* p, std::string_view s) {
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

DTL_INLINE void append_varint(std::string& out, std::uint64_t v) {
  char tmp[10];
  out.append(tmp, static_cast<std::size_t>(put_varint(tmp, v) - tmp));
}

DTL_INLINE void append_fixed32(std::string& out, std::uint32_t v) {
  char tmp[4];
  out.append(tmp, static_cast<std::size_t>(put_fixed32(tmp, v) - tmp));
}

DTL_INLINE void append_fixed64(std::string& out, std::uint64_t v) {
  char tmp[8];
  out.append(tmp, static_cast<std::size_t>(put_fixed64(tmp, v) - tmp));
}

DTL_INLINE void append_key(std::string& out, std::uint32_t field, WireType type) {
  append_varint(out, (std::uint64_t{field} << 3) | static_cast<std::uint8_t>(type));
}

DTL_INLINE void append_double_field(std::string& out, std::uint32_t field, double v) {
  append_key(out, field, WireType::fixed64);
  append_fixed64(out, std::bit_cast<std::uint64_t>(v));
}

DTL_INLINE void append_float_field(std::string& out, std::uint32_t field, float v) {
  append_key(out, field, WireType::fixed32);
  append_fixed32(out, std::bit_cast<std::uint32_t>(v));
}

DTL_INLINE void append_varint_field(std::string& out, std::uint32_t field, std::uint64_t v) {
  append_key(out, field, WireType::varint);
  append_varint(out, v);
}

DTL_INLINE void append_bytes_field(std::string& out, std::uint32_t field, std::string_view bytes) {
  append_key(out, field, WireType::length_delimited);
  append_varint(out, bytes.size());
  out.append(bytes);
}

DTL_INLINE char* put_scalar_event(char* p, double wall_time, std::int64_t step, std::string_view tag_prefix,
                                  std::string_view tag_name, float value) {
  const std::size_t tag_size = tag_prefix.size() + tag_name.size();
  const std::size_t value_size = (tag_size ? 1 + varint_size(tag_size) + tag_size : 0) + 1 + 4;
  const std::size_t summary_size = 1 + varint_size(value_size) + value_size;
  if (wall_time != 0.0)
    p = put_fixed64(put_key(p, event_wall_time, WireType::fixed64), std::bit_cast<std::uint64_t>(wall_time));
  if (step != 0) p = put_varint(put_key(p, event_step, WireType::varint), static_cast<std::uint64_t>(step));
  p = put_varint(put_key(p, event_summary, WireType::length_delimited), summary_size);
  p = put_varint(put_key(p, summary_value, WireType::length_delimited), value_size);
  if (tag_size) {
    p = put_varint(put_key(p, value_tag, WireType::length_delimited), tag_size);
    p = put_bytes(put_bytes(p, tag_prefix), tag_name);
  }
  return put_fixed32(put_key(p, value_simple_value, WireType::fixed32), std::bit_cast<std::uint32_t>(value));
}

DTL_INLINE std::string encode_scalar_event(double wall_time, std::int64_t step, std::string_view tag, float value) {
  std::string out(scalar_event_size(wall_time, step, tag.size()), '\0');
  put_scalar_event(out.data(), wall_time, step, {}, tag, value);
  return out;
}

DTL_INLINE std::string encode_file_version_event(double wall_time, std::string_view file_version) {
  std::string out;
  if (wall_time != 0.0) append_double_field(out, event_wall_time, wall_time);
  append_bytes_field(out, event_file_version, file_version);
  return out;
}

DTL_INLINE std::string encode_session_start_event(double wall_time, std::int64_t step) {
  std::string log;
  append_varint_field(log, session_log_status, session_log_start);
  std::string out;
  append_double_field(out, event_wall_time, wall_time);
  append_varint_field(out, event_step, static_cast<std::uint64_t>(step));
  append_bytes_field(out, event_session_log, log);
  return out;
}

DTL_INLINE void seal_record(char* p, std::size_t length) {
  put_fixed64(p, length);
  put_fixed32(p + 8, mask_crc32c(crc32c(std::string_view(p, 8))));
  put_fixed32(p + record_header_size + length, mask_crc32c(crc32c(std::string_view(p + record_header_size, length))));
}

DTL_INLINE void append_record(std::string& out, std::string_view payload) {
  const std::size_t at = out.size();
  out.resize(at + record_header_size + payload.size() + record_footer_size);
  put_bytes(out.data() + at + record_header_size, payload);
  seal_record(out.data() + at, payload.size());
}

DTL_INLINE std::string frame_record(std::string_view payload) {
  std::string out;
  append_record(out, payload);
  return out;
}

DTL_INLINE void append_scalar_record(std::string& out, double wall_time, std::int64_t step, std::string_view tag_prefix,
                                     std::string_view tag_name, float value) {
  const std::size_t length = scalar_event_size(wall_time, step, tag_prefix.size() + tag_name.size());
  const std::size_t at = out.size();
  out.resize(at + record_header_size + length + record_footer_size);
  char* p = out.data() + at;
  put_scalar_event(p + record_header_size, wall_time, step, tag_prefix, tag_name, value);
  seal_record(p, length);
}

DTL_INLINE double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

DTL_INLINE std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string name(buf);
  for (char& ch : name)
    if (ch == '/') ch = '_';  // never a path separator in a file name
  return name;
}

DTL_INLINE std::string event_file_name(double wall_time, std::uint64_t uid, std::string_view suffix) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%010lld", static_cast<long long>(wall_time));
  std::string name = "events.out.tfevents.";
  name += secs;
  name += '.';
  name += host_name();
  name += '.';
  name += std::to_string(static_cast<long long>(::getpid()));
  name += '.';
  name += std::to_string(uid);
  name += suffix;
  return name;
}

}  // namespace detail

namespace tensorboard {

DTL_INLINE std::string training_tag(std::string_view metric) {
  std::string tag(tag_prefix);
  tag += metric;
  return tag;
}

DTL_INLINE std::string validation_name(std::string_view metric) {
  return metric.starts_with("val") ? std::string(metric) : "val_" + std::string(metric);
}

}  // namespace tensorboard
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE SummaryWriter::SummaryWriter(std::filesystem::path log_dir, SummaryWriterOptions options)
    : log_dir_(std::move(log_dir)), options_(std::move(options)) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir_, ec);
  if (ec)
    throw TensorBoardError("dtl: cannot create TensorBoard log directory " + log_dir_.string() + ": " + ec.message());
  const double now = detail::unix_seconds();
  // O_EXCL: a name already taken (another process on a host with the same name and pid, or a
  // file left over in a reused directory) is never appended to; the next uid is tried instead.
  for (int attempt = 0;; ++attempt) {
    path_ = log_dir_ / detail::event_file_name(now, detail::event_file_uid.fetch_add(1), options_.filename_suffix);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    const int err = errno;
    if (err != EEXIST || attempt == 1000)
      throw TensorBoardError("dtl: cannot create TensorBoard event file " + path_.string() + ": " +
                             detail::errno_text(err));
  }
  detail::append_record(buffer_, detail::encode_file_version_event(now));
  // Written at once so that a usable (if empty) file exists and a read-only or full disk
  // shows up here rather than at the first flush.
  try {
    flush();
  } catch (...) {
    ::close(std::exchange(fd_, -1));  // no destructor runs for a throwing constructor
    throw;
  }
}

DTL_INLINE SummaryWriter::SummaryWriter(SummaryWriter&& other) noexcept
    : log_dir_(std::move(other.log_dir_)),
      path_(std::move(other.path_)),
      options_(std::move(other.options_)),
      fd_(std::exchange(other.fd_, -1)),
      buffer_(std::move(other.buffer_)),
      queued_(std::exchange(other.queued_, 0)),
      last_flush_(other.last_flush_),
      children_(std::move(other.children_)) {
  other.buffer_.clear();
}

DTL_INLINE void SummaryWriter::add_scalar_parts(std::string_view prefix, std::string_view name, double value,
                                                std::int64_t step, double wall_time, double now) {
  if (fd_ < 0) return;
  detail::append_scalar_record(buffer_, wall_time, step, prefix, name, static_cast<float>(value));
  // `now < last_flush_`: the clock went back; flushing is the safe reading of that.
  if (++queued_ >= options_.max_queue || now - last_flush_ >= options_.flush_secs || now < last_flush_) flush();
}

DTL_INLINE void SummaryWriter::close_quietly() noexcept {
  try {
    close();
  } catch (const std::exception& e) {
    std::cerr << "[dtl] warning: " << e.what() << '\n';
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }
}

DTL_INLINE void BatchMetricWriter::on_train_step_end(std::int64_t steps_completed, const ScalarMetrics& metrics,
                                                     const std::vector<ScalarMetrics>& batch_metrics) {
  const auto n = static_cast<std::int64_t>(batch_metrics.size());
  for (std::int64_t i = 0; i < n; ++i)
    writer_->write_training_metrics(batch_metrics[static_cast<std::size_t>(i)], steps_completed - n + i);
  std::set<std::string_view> seen;
  for (const auto& batch : batch_metrics)
    for (const auto& entry : batch) seen.insert(entry.first);
  ScalarMetrics unseen;
  for (const auto& entry : metrics)
    if (!seen.contains(entry.first)) unseen.push_back(entry);
  writer_->write_training_metrics(unseen, steps_completed);
  writer_->flush();
}

DTL_INLINE void BatchMetricWriter::on_train_step_end(std::int64_t steps_completed, const ScalarMetrics& metrics,
                                                     std::span<const std::string_view> names,
                                                     std::span<const std::vector<double>> columns) {
  std::size_t n = 0;
  for (const auto& c : columns) n = std::max(n, c.size());
  for (std::size_t k = 0; k < names.size(); ++k)
    writer_->write_column(tensorboard::tag_prefix, names[k], columns[k],
                          steps_completed - static_cast<std::int64_t>(columns[k].size()));
  ScalarMetrics unseen;
  for (const auto& entry : metrics)
    if (std::find(names.begin(), names.end(), entry.first) == names.end()) unseen.push_back(entry);
  writer_->write_training_metrics(unseen, steps_completed);
  writer_->flush();
}

DTL_INLINE void BatchMetricWriter::on_validation_step_end(std::int64_t steps_completed, const ScalarMetrics& metrics) {
  writer_->write_validation_metrics(metrics, steps_completed);
  writer_->flush();
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LOG_TENSORBOARD_INL_HPP
