// dtl — the console progress line: batches done of the phase in progress (training or
// validation), its rate, ETA and latest loss. On a terminal it is redrawn in place; in CI logs and
// files it becomes a sparse plain line; quiet, it prints nothing. Torch-free: the trainer passes
// plain numbers it already holds on the host, so drawing never forces a device sync.
#ifndef DTL_LOG_PROGRESS_HPP
#define DTL_LOG_PROGRESS_HPP

#include <dtl/detail/abi.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <string_view>
#include <utility>

#if __has_include(<unistd.h>)
#include <unistd.h>
#define DTL_PROGRESS_HAS_ISATTY 1
#endif

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Whether `stream` is an interactive terminal that honours `\r` and ANSI "erase to end of line".
inline bool stream_is_tty(std::FILE* stream) noexcept {
#ifdef DTL_PROGRESS_HAS_ISATTY
  if (stream == nullptr || ::isatty(::fileno(stream)) == 0) return false;
  // Emacs shells and some CI runners allocate a pty but set TERM=dumb: escape codes would show raw.
  const char* term = std::getenv("TERM");
  return term == nullptr || std::string_view(term) != "dumb";
#else
  (void)stream;
  return false;
#endif
}

/// How a progress line shows itself.
enum class ProgressStyle {
  tty,    ///< one line redrawn in place (`\r` + erase to end of line), time-throttled
  plain,  ///< separate sparse lines, never a carriage return: CI logs, files, pipes
  quiet,  ///< nothing at all (non-chief ranks, a quiet run)
};

/// The style for a line written to `stream`: `quiet` if asked, `tty` on a terminal, else `plain`.
inline ProgressStyle default_progress_style(std::FILE* stream = stdout, bool quiet = false) noexcept {
  if (quiet) return ProgressStyle::quiet;
  return stream_is_tty(stream) ? ProgressStyle::tty : ProgressStyle::plain;
}

/// Options of a progress line. The defaults suit a line on stdout.
struct ProgressOptions {
  /// Decided once per line; pass it explicitly when writing anywhere but stdout (and in tests).
  ProgressStyle style = default_progress_style();
  /// TTY: the least time between two redraws. Redrawing more often than the eye reads only
  /// costs the training loop.
  std::chrono::duration<double> tty_redraw{0.1};
  /// Plain: a line needs at least this much time AND `plain_fraction` of the total since the
  /// previous one, so a log gets whichever is sparser.
  std::chrono::duration<double> plain_interval{30.0};
  /// Plain: the least fraction of the total between two lines (ignored when the total is unknown).
  double plain_fraction = 0.1;
  /// Time constant of the rate's exponential smoothing: long enough to steady the ETA across
  /// uneven batches, short enough to follow a real change of speed.
  std::chrono::duration<double> rate_window{10.0};
};

/// A console progress line for one phase ("train", "validate").
///
/// `update(done)` is meant for every batch: it costs an integer compare, a clock read and a
/// time compare, and formats or writes only when a redraw (TTY) or a line (plain) is due. Not
/// thread-safe: one thread drives it. `Clock` needs `now()` (called on the stored instance, so a
/// test clock can carry state), `time_point` and `duration`.
template <class Clock = std::chrono::steady_clock>
class BasicProgressLine {
 public:
  using time_point = typename Clock::time_point;

  /// A line for `phase` with `total` batches (`std::nullopt` or a value <= 0: unknown), written
  /// to `out`. Nothing is printed until the first `update`.
  BasicProgressLine(std::string_view phase, std::optional<std::int64_t> total, std::ostream& out = std::cout,
                    ProgressOptions options = {}, Clock clock = Clock{})
      : clock_(std::move(clock)),
        out_(&out),
        phase_(phase),
        total_(total.value_or(0) > 0 ? *total : 0),
        style_(options.style),
        redraw_(to_duration(options.tty_redraw)),
        interval_(to_duration(options.plain_interval)),
        tau_s_(options.rate_window.count() > 0 ? options.rate_window.count() : 1e-9),
        start_(clock_.now()) {
    if (style_ == ProgressStyle::quiet) next_done_ = never;
    if (total_ > 0 && options.plain_fraction > 0) {
      step_ = static_cast<std::int64_t>(std::ceil(static_cast<double>(total_) * options.plain_fraction));
    }
    for (std::int64_t t = total_; t >= 10; t /= 10) ++total_digits_;
  }

  BasicProgressLine(const BasicProgressLine&) = delete;
  BasicProgressLine& operator=(const BasicProgressLine&) = delete;

  /// Ends a bar left on screen with a newline, so that whatever follows (an exception's message,
  /// the shell prompt) starts on a line of its own.
  ~BasicProgressLine() {
    if (!visible_) return;
    try {
      *out_ << '\n' << std::flush;
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }

  /// Records that `done` batches of the phase are complete (a running count, e.g.
  /// steps_completed); shows it if a redraw or a line is due.
  void update(std::int64_t done) {
    done_ = done;
    if (done < next_done_) return;  // plain: not yet a fraction further; quiet/finished: never
    const time_point now = clock_.now();
    if (now < next_time_) return;
    due(now);
  }

  /// `update(done)` that asks `latest_loss()` (a std::optional<double>) for the loss to show only
  /// when a redraw is due: a per-batch loss read at the redraw rate, never per batch.
  template <class LatestLoss>
    requires std::is_invocable_v<LatestLoss&>
  void update(std::int64_t done, LatestLoss&& latest_loss) {
    done_ = done;
    if (done < next_done_) return;
    const time_point now = clock_.now();
    if (now < next_time_) return;
    if (const std::optional<double> loss = latest_loss()) set_loss(*loss);
    due(now);
  }

  /// `update(done)` plus the latest loss; pass only a value already on the host.
  void update(std::int64_t done, double loss) {
    set_loss(loss);
    update(done);
  }

  /// Sets the loss shown from the next redraw on (NaN shows as "nan": a diverging run should say so).
  void set_loss(double loss) noexcept {
    loss_ = loss;
    has_loss_ = true;
  }

  /// Removes the bar from the screen (TTY) so the caller can print its own lines, and pauses
  /// the phase until the next `update`, which draws the bar again at once. Call it before a
  /// validation: the time until training resumes is left out of the rate, the ETA and the final
  /// average, which then describe training alone (the reporter's batches/s does the same).
  void clear() {
    if (finished_ || style_ == ProgressStyle::quiet) return;
    if (started_ && !pausing_) {
      pausing_ = true;
      pause_start_ = clock_.now();
      saved_next_done_ = next_done_;
      saved_next_time_ = next_time_;
      // Lets the next update through to due(), which ends the pause.
      next_done_ = std::numeric_limits<std::int64_t>::min();
      next_time_ = time_point::min();
    }
    if (!visible_) return;
    *out_ << "\r\x1b[K" << std::flush;
    visible_ = false;
  }

  /// Prints `line` (plus a newline) as a log line of its own: on a TTY the bar is cleared first
  /// and redrawn below it, so neither mangles the other. Printed in every style, quiet included:
  /// the line is the caller's log, not progress.
  void print_above(std::string_view line) {
    if (visible_) {
      *out_ << "\r\x1b[K" << line << '\n';
      const std::size_t n = render(false, time_point{});
      out_->write(buf_, static_cast<std::streamsize>(n));
      *out_ << "\x1b[K" << std::flush;
    } else {
      *out_ << line << '\n' << std::flush;
    }
  }

  /// Ends the phase. TTY: draws the final state (average rate without pauses, elapsed wall time
  /// with them) and ends the line, leaving it in the scrollback. Plain: a final line, but only if
  /// the phase printed any line before (a phase that ended before its first line stays silent:
  /// the caller's summary says the rest). Later calls and updates do nothing.
  void finish() {
    if (finished_) return;
    finished_ = true;
    next_done_ = never;
    if (style_ == ProgressStyle::quiet || !started_) return;
    if (style_ == ProgressStyle::plain && lines_ == 0) return;
    const time_point now = clock_.now();
    if (pausing_) first_time_ += now - pause_start_;  // a final validation is no training time
    const std::size_t n = render(true, now);
    if (style_ == ProgressStyle::tty) *out_ << '\r';
    out_->write(buf_, static_cast<std::streamsize>(n));
    if (style_ == ProgressStyle::tty) *out_ << "\x1b[K";
    *out_ << '\n' << std::flush;
    visible_ = false;
  }

  /// The smoothed rate in batches/s as of the last redraw or line; empty before two samples.
  [[nodiscard]] std::optional<double> rate() const noexcept {
    if (decayed_seconds_ <= 0) return std::nullopt;
    return decayed_batches_ / decayed_seconds_;
  }

  /// The latest count passed to `update`.
  [[nodiscard]] std::int64_t done() const noexcept { return done_; }

 private:
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
  using duration = typename Clock::duration;

  static duration to_duration(std::chrono::duration<double> d) { return std::chrono::duration_cast<duration>(d); }
  static double seconds(duration d) { return std::chrono::duration<double>(d).count(); }

  // The slow path of update(): kept out of line so that the per-batch call stays small.
  [[gnu::noinline]] void due(time_point now) {
    if (!started_) {
      // The rate starts at the first completed batch, not at construction: the first batch
      // carries one-off costs (loader workers starting, allocator warm-up) that would skew the
      // ETA for a long while.
      started_ = true;
      first_time_ = sample_time_ = now;
      first_done_ = sample_done_ = done_;
      if (style_ == ProgressStyle::plain) {
        arm_plain(now);
        return;
      }
    } else {
      if (pausing_) {
        pausing_ = false;
        // Shifting the rate's time origins by the pause leaves it out of every rate.
        const auto paused = now - pause_start_;
        sample_time_ += paused;
        first_time_ += paused;
        if (style_ == ProgressStyle::plain) {
          next_done_ = saved_next_done_;
          next_time_ = saved_next_time_;
          if (done_ < next_done_ || now < next_time_) return;
        }
      }
      sample(now);
    }
    const std::size_t n = render(false, now);
    if (style_ == ProgressStyle::tty) {
      *out_ << '\r';
      out_->write(buf_, static_cast<std::streamsize>(n));
      *out_ << "\x1b[K" << std::flush;
      visible_ = true;
      next_time_ = now + redraw_;
    } else {
      out_->write(buf_, static_cast<std::streamsize>(n));
      *out_ << '\n' << std::flush;
      ++lines_;
      arm_plain(now);
    }
  }

  void arm_plain(time_point now) {
    next_done_ = done_ > never - step_ ? never : done_ + step_;
    next_time_ = now + interval_;
  }

  // Folds the batches since the previous sample into an exponentially decayed ratio
  // batches/seconds: exact for a steady rate, and free of the start-up bias of a plain EMA of
  // per-interval rates (which needs a seed value).
  void sample(time_point now) {
    const double dt = seconds(now - sample_time_);
    if (dt <= 0) return;
    const double keep = std::exp(-dt / tau_s_);
    decayed_batches_ = keep * decayed_batches_ + static_cast<double>(done_ - sample_done_);
    decayed_seconds_ = keep * decayed_seconds_ + dt;
    sample_time_ = now;
    sample_done_ = done_;
  }

  // Formats the line into buf_ (no allocation) and returns its length. `final_line` shows the
  // phase's average rate and elapsed time instead of the smoothed rate and the ETA.
  std::size_t render(bool final_line, time_point now) {
    len_ = 0;
    const auto done = static_cast<long long>(done_);
    append("%s  ", phase_.c_str());
    if (total_ > 0) {
      const double pct = std::floor(100.0 * static_cast<double>(done_) / static_cast<double>(total_));
      const int shown = pct < 0 ? 0 : pct > 100 ? 100 : static_cast<int>(pct);
      append("%*lld/%lld [%3d%%]", total_digits_, done, static_cast<long long>(total_), shown);
    } else {
      append("%lld", done);
    }
    std::optional<double> r = rate();
    if (final_line) {
      const double dt = seconds(now - first_time_);
      if (dt > 0 && done_ > first_done_) r = static_cast<double>(done_ - first_done_) / dt;
    }
    if (r && *r > 0) {
      // Slow phases read better per batch, as tqdm does: "0.2 batch/s" hides "5.00 s/batch".
      if (*r >= 1.0) {
        append("  %.1f batch/s", *r);
      } else {
        append("  %.2f s/batch", 1.0 / *r);
      }
    }
    if (final_line) {
      append_clock("  in ", seconds(now - start_));
    } else if (total_ > 0 && done_ < total_ && r && *r > 0) {
      append_clock("  ETA ", static_cast<double>(total_ - done_) / *r);
    }
    if (has_loss_) append("  loss %.4f", loss_);
    return len_;
  }

  // h:mm:ss from an hour on, m:ss below.
  void append_clock(const char* label, double secs) {
    if (!std::isfinite(secs) || secs < 0) return;
    const long long s = std::llround(secs);
    if (s >= 3600) {
      append("%s%lld:%02lld:%02lld", label, s / 3600, s / 60 % 60, s % 60);
    } else {
      append("%s%lld:%02lld", label, s / 60, s % 60);
    }
  }

  [[gnu::format(printf, 2, 3)]] void append(const char* fmt, ...) {
    if (len_ + 1 >= sizeof buf_) return;
    std::va_list args;
    va_start(args, fmt);
    const int n = std::vsnprintf(buf_ + len_, sizeof buf_ - len_, fmt, args);
    va_end(args);
    if (n > 0) len_ = std::min(len_ + static_cast<std::size_t>(n), sizeof buf_ - 1);
  }

  Clock clock_;
  std::ostream* out_;
  std::string phase_;
  std::int64_t total_;  // 0: unknown
  ProgressStyle style_;
  duration redraw_;
  duration interval_;
  double tau_s_;
  std::int64_t step_ = 0;  // plain: batches between lines
  int total_digits_ = 1;

  // update()'s gates. min() lets the first update through to due() in every non-quiet style.
  std::int64_t next_done_ = std::numeric_limits<std::int64_t>::min();
  time_point next_time_ = time_point::min();

  std::int64_t done_ = 0;
  time_point start_;
  time_point first_time_{};
  std::int64_t first_done_ = 0;
  time_point sample_time_{};
  std::int64_t sample_done_ = 0;
  double decayed_batches_ = 0;
  double decayed_seconds_ = 0;
  double loss_ = 0;
  bool has_loss_ = false;
  bool started_ = false;
  bool visible_ = false;  // TTY: a bar is on screen and the cursor sits on its line
  bool finished_ = false;
  bool pausing_ = false;  // clear() was called; the next update ends the pause
  time_point pause_start_{};
  std::int64_t saved_next_done_ = 0;  // plain's gates, kept across a pause
  time_point saved_next_time_{};
  std::int64_t lines_ = 0;  // plain lines printed

  char buf_[256] = {};
  std::size_t len_ = 0;
};

/// The progress line the trainer uses: steady_clock time.
using ProgressLine = BasicProgressLine<>;

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#undef DTL_PROGRESS_HAS_ISATTY

#endif  // DTL_LOG_PROGRESS_HPP
