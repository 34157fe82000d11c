// Tests for include/dtl/log/progress.hpp: throttling, TTY vs plain output, rate/ETA math, quiet,
// log lines printed above the bar, unknown totals. A fake clock makes every case deterministic.
#include <dtl/log/progress.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace {

using namespace std::chrono_literals;
using dtl::detail::BasicProgressLine;
using dtl::detail::ProgressOptions;
using dtl::detail::ProgressStyle;

// A clock the test moves by hand. Copies share the time, so the line's copy sees every advance.
struct FakeClock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<FakeClock>;
  static constexpr bool is_steady = true;

  std::shared_ptr<duration> t = std::make_shared<duration>(0);
  [[nodiscard]] time_point now() const { return time_point(*t); }
  void advance(duration d) const { *t += d; }
};

using Line = BasicProgressLine<FakeClock>;

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + part.size())) ++n;
  return n;
}

// What a terminal shows after `text`: `\r` returns to column 0, `\n` starts a new row, ESC[K
// erases to the end of the row, anything else overwrites the cell under the cursor.
std::vector<std::string> screen(const std::string& text) {
  std::vector<std::string> rows(1);
  std::size_t row = 0;
  std::size_t col = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\r') {
      col = 0;
    } else if (c == '\n') {
      ++row;
      col = 0;
      if (row == rows.size()) rows.emplace_back();
    } else if (text.compare(i, 3, "\x1b[K") == 0) {
      rows[row].resize(std::min(rows[row].size(), col));
      i += 2;
    } else {
      if (c == '\x1b') FAIL_CHECK("an escape sequence other than ESC[K");
      if (col < rows[row].size()) {
        rows[row][col] = c;
      } else {
        rows[row].push_back(c);
      }
      ++col;
    }
  }
  return rows;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Runs batches 1..n, one every `per_batch`.
void run(Line& line, const FakeClock& clock, std::int64_t n, FakeClock::duration per_batch) {
  for (std::int64_t i = 1; i <= n; ++i) {
    clock.advance(per_batch);
    line.update(i);
  }
}

TEST_CASE("tty: 1000 updates within 50 ms redraw at most once, later updates redraw again") {
  FakeClock clock;
  std::ostringstream out;
  Line line("train", 5000, out, {.style = ProgressStyle::tty}, clock);
  run(line, clock, 1000, 50us);
  CHECK(count(out.str(), "\r") == 1);  // the first update shows the bar at once
  clock.advance(100ms);
  line.update(1001);
  CHECK(count(out.str(), "\r") == 2);
  line.update(1002);  // same instant: throttled
  CHECK(count(out.str(), "\r") == 2);
}

TEST_CASE("tty: redraws in place with \\r and erase-to-end, finish ends the line") {
  FakeClock clock;
  std::ostringstream out;
  Line line("train", 1000, out, {.style = ProgressStyle::tty}, clock);
  run(line, clock, 1000, 10ms);  // 10 s at 100 batch/s: about 100 redraws
  const std::string drawn = out.str();
  CHECK(count(drawn, "\r") >= 90);
  CHECK(count(drawn, "\r") <= 101);
  CHECK(count(drawn, "\x1b[K") == count(drawn, "\r"));
  CHECK(drawn.find('\n') == std::string::npos);
  line.finish();
  CHECK(out.str().back() == '\n');
  const auto rows = screen(out.str());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == "train  1000/1000 [100%]  100.0 batch/s  in 0:10");
  CHECK(rows[1].empty());
  const std::size_t before = out.str().size();
  line.update(1001);  // after finish: nothing
  line.finish();
  CHECK(out.str().size() == before);
}

TEST_CASE("plain: no carriage returns, a line per interval AND fraction, whichever is sparser") {
  SUBCASE("fraction and interval coincide: 9 lines plus the final one") {
    FakeClock clock;
    std::ostringstream out;
    Line line("train", 1000, out, {.style = ProgressStyle::plain, .plain_interval = 1s}, clock);
    run(line, clock, 1000, 10ms);
    line.finish();
    const std::string text = out.str();
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.find('\x1b') == std::string::npos);
    const auto lines = lines_of(text);
    REQUIRE(lines.size() == 10);
    CHECK(lines[0] == "train   101/1000 [ 10%]  100.0 batch/s  ETA 0:09");
    CHECK(lines[8] == "train   901/1000 [ 90%]  100.0 batch/s  ETA 0:01");
    CHECK(lines[9] == "train  1000/1000 [100%]  100.0 batch/s  in 0:10");
  }
  SUBCASE("the interval is sparser than 10%: every 3 s") {
    FakeClock clock;
    std::ostringstream out;
    Line line("train", 1000, out, {.style = ProgressStyle::plain, .plain_interval = 3s}, clock);
    run(line, clock, 1000, 10ms);
    line.finish();
    const auto lines = lines_of(out.str());
    REQUIRE(lines.size() == 4);
    CHECK(lines[0].starts_with("train   301/1000 [ 30%]"));
    CHECK(lines[1].starts_with("train   601/1000 [ 60%]"));
    CHECK(lines[2].starts_with("train   901/1000 [ 90%]"));
  }
  SUBCASE("10% is sparser than the interval: every 100 batches") {
    FakeClock clock;
    std::ostringstream out;
    Line line("train", 1000, out, {.style = ProgressStyle::plain, .plain_interval = 100ms}, clock);
    run(line, clock, 1000, 10ms);
    CHECK(lines_of(out.str()).size() == 9);
  }
  SUBCASE("a phase shorter than the default 30 s stays silent, finish included") {
    FakeClock clock;
    std::ostringstream out;
    Line line("validate", 1000, out, {.style = ProgressStyle::plain}, clock);
    run(line, clock, 1000, 10ms);
    line.finish();
    CHECK(out.str().empty());
  }
}

TEST_CASE("rate and ETA") {
  FakeClock clock;
  std::ostringstream out;
  const ProgressOptions every_update{.style = ProgressStyle::tty, .tty_redraw = 0s};

  SUBCASE("steady 100 batch/s: rate 100, ETA = remaining / rate") {
    Line line("train", 1000, out, every_update, clock);
    run(line, clock, 500, 10ms);
    REQUIRE(line.rate().has_value());
    CHECK(*line.rate() == doctest::Approx(100.0));
    CHECK(screen(out.str()).back() == "train   500/1000 [ 50%]  100.0 batch/s  ETA 0:05");
  }
  SUBCASE("the first batch's start-up time is left out of the rate") {
    Line line("train", 1000, out, every_update, clock);
    clock.advance(5s);  // a slow first batch
    line.update(1);
    CHECK_FALSE(line.rate().has_value());
    CHECK(screen(out.str()).back() == "train     1/1000 [  0%]");
    for (std::int64_t i = 2; i <= 101; ++i) {
      clock.advance(20ms);
      line.update(i);
    }
    CHECK(*line.rate() == doctest::Approx(50.0));
  }
  SUBCASE("the smoothed rate follows a change of speed") {
    Line line("train", 1'000'000, out, every_update, clock);
    run(line, clock, 1000, 10ms);  // 100 batch/s
    for (std::int64_t i = 1001; i <= 7000; ++i) {
      clock.advance(5ms);  // then 200 batch/s for 30 s, three time constants
      line.update(i);
    }
    CHECK(*line.rate() > 190.0);
    CHECK(*line.rate() < 200.0);
  }
  SUBCASE("hours in the ETA") {
    Line line("train", 1'000'000, out, every_update, clock);
    run(line, clock, 500, 10ms);
    CHECK(screen(out.str()).back() == "train      500/1000000 [  0%]  100.0 batch/s  ETA 2:46:35");
  }
  SUBCASE("slow phases show seconds per batch") {
    Line line("train", 10, out, every_update, clock);
    run(line, clock, 3, 4s);
    CHECK(screen(out.str()).back() == "train   3/10 [ 30%]  4.00 s/batch  ETA 0:28");
  }
  SUBCASE("past the total: 100%, no ETA") {
    Line line("train", 10, out, every_update, clock);
    run(line, clock, 12, 10ms);
    CHECK(screen(out.str()).back() == "train  12/10 [100%]  100.0 batch/s");
  }
}

TEST_CASE("loss: the latest value, NaN shown as such") {
  FakeClock clock;
  std::ostringstream out;
  Line line("train", 100, out, {.style = ProgressStyle::tty, .tty_redraw = 0s}, clock);
  clock.advance(10ms);
  line.update(1, 0.48213);
  clock.advance(10ms);
  line.update(2);
  CHECK(screen(out.str()).back() == "train    2/100 [  2%]  100.0 batch/s  ETA 0:01  loss 0.4821");
  clock.advance(10ms);
  line.update(3, std::numeric_limits<double>::quiet_NaN());
  CHECK(screen(out.str()).back().ends_with("loss nan"));
}

TEST_CASE("loss: a source asked only when a redraw is due, and shown from the first batch") {
  FakeClock clock;
  std::ostringstream out;
  Line line("train", 1000, out, {.style = ProgressStyle::tty, .tty_redraw = 100ms}, clock);
  int asked = 0;
  double latest = 0;
  auto source = [&]() -> std::optional<double> {
    ++asked;
    return latest;
  };
  for (int i = 1; i <= 50; ++i) {  // 50 batches in 50 ms: the first draws, the rest are throttled
    latest = 2.0 / i;
    clock.advance(1ms);
    line.update(i, source);
  }
  CHECK(asked == 1);
  CHECK(screen(out.str()).back().ends_with("loss 2.0000"));
  clock.advance(100ms);
  latest = 0.125;
  line.update(51, source);
  CHECK(asked == 2);
  CHECK(screen(out.str()).back().ends_with("loss 0.1250"));
  // No value on the host (a device tensor): the last one stays.
  clock.advance(100ms);
  line.update(52, [&]() -> std::optional<double> { return std::nullopt; });
  CHECK(screen(out.str()).back().ends_with("loss 0.1250"));
}

TEST_CASE("quiet prints nothing; a log line through print_above still appears") {
  FakeClock clock;
  std::ostringstream out;
  {
    Line line("train", 1000, out, {.style = ProgressStyle::quiet}, clock);
    run(line, clock, 1000, 10ms);
    line.clear();
    line.finish();
    CHECK(out.str().empty());
    line.print_above("[train] batch 1000");
  }
  CHECK(out.str() == "[train] batch 1000\n");
}

TEST_CASE("print_above keeps the caller's line intact and redraws the bar below it") {
  FakeClock clock;
  std::ostringstream out;
  Line line("train", 1000, out, {.style = ProgressStyle::tty}, clock);
  run(line, clock, 100, 10ms);
  const std::string summary = "[train] batch 100 epoch 0 (10%) loss=0.5000 | 100.0 batches/s";
  line.print_above(summary);
  auto rows = screen(out.str());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == summary);
  CHECK(rows[1].starts_with("train   100/1000 [ 10%]  100.0 batch/s"));
  for (std::int64_t i = 101; i <= 201; ++i) {  // redraws at 1.01 s, 1.11 s, ... 2.01 s
    clock.advance(10ms);
    line.update(i);
  }
  rows = screen(out.str());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == summary);
  CHECK(rows[1].starts_with("train   201/1000 [ 20%]"));

  // clear(): the caller prints on its own, the next update draws the bar again at once.
  line.clear();
  out << "[valid] batch 201 accuracy=0.9\n";
  clock.advance(1ms);
  line.update(202);
  rows = screen(out.str());
  REQUIRE(rows.size() == 3);
  CHECK(rows[1] == "[valid] batch 201 accuracy=0.9");
  CHECK(rows[2].starts_with("train   202/1000 [ 20%]"));

  line.finish();
  rows = screen(out.str());
  REQUIRE(rows.size() == 4);
  CHECK(rows[2].starts_with("train   202/1000 [ 20%]"));
  CHECK(rows[3].empty());
}

TEST_CASE("clear() pauses the phase: a validation in between leaves the rate alone") {
  FakeClock clock;
  std::ostringstream out;
  SUBCASE("tty: rate, ETA and the final average exclude the pause; elapsed includes it") {
    Line line("train", 1000, out, {.style = ProgressStyle::tty, .tty_redraw = 0s}, clock);
    run(line, clock, 500, 10ms);
    line.clear();
    clock.advance(20s);  // validation
    for (std::int64_t i = 501; i <= 600; ++i) {
      clock.advance(10ms);
      line.update(i);
    }
    CHECK(*line.rate() == doctest::Approx(100.0).epsilon(0.02));
    CHECK(screen(out.str()).back().starts_with("train   600/1000 [ 60%]  10"));
    for (std::int64_t i = 601; i <= 1000; ++i) {
      clock.advance(10ms);
      line.update(i);
    }
    line.clear();
    clock.advance(20s);  // a final validation
    line.finish();
    const auto rows = screen(out.str());
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].starts_with("train  1000/1000 [100%]  10"));  // ~100 batch/s, not ~20
    CHECK(rows[0].ends_with("batch/s  in 0:50"));
  }
  SUBCASE("without clear() the pause drags the rate down") {
    Line line("train", 1000, out, {.style = ProgressStyle::tty, .tty_redraw = 0s}, clock);
    run(line, clock, 500, 10ms);
    clock.advance(20s);
    for (std::int64_t i = 501; i <= 600; ++i) {
      clock.advance(10ms);
      line.update(i);
    }
    CHECK(*line.rate() < 50.0);
  }
  SUBCASE("plain: the line schedule survives the pause") {
    Line line("train", 1000, out, {.style = ProgressStyle::plain, .plain_interval = 1s}, clock);
    run(line, clock, 150, 10ms);  // a line at 101
    line.clear();
    clock.advance(2s);
    for (std::int64_t i = 151; i <= 1000; ++i) {
      clock.advance(10ms);
      line.update(i);
    }
    line.finish();
    const auto lines = lines_of(out.str());
    REQUIRE(lines.size() == 10);
    CHECK(lines[0] == "train   101/1000 [ 10%]  100.0 batch/s  ETA 0:09");
    CHECK(lines[1].starts_with("train   201/1000 [ 20%]  10"));
    CHECK(lines[9].ends_with("batch/s  in 0:12"));  // wall time, the pause included
  }
}

TEST_CASE("plain: print_above is just a line") {
  FakeClock clock;
  std::ostringstream out;
  Line line("train", 1000, out, {.style = ProgressStyle::plain}, clock);
  run(line, clock, 100, 10ms);
  line.print_above("[train] batch 100");
  CHECK(out.str() == "[train] batch 100\n");
}

TEST_CASE("unknown total: count, rate and loss; no percentage, no ETA") {
  FakeClock clock;
  std::ostringstream out;
  SUBCASE("tty") {
    Line line("train", std::nullopt, out, {.style = ProgressStyle::tty, .tty_redraw = 0s}, clock);
    run(line, clock, 1233, 10ms);
    clock.advance(10ms);
    line.update(1234, 0.48213);
    CHECK(screen(out.str()).back() == "train  1234  100.0 batch/s  loss 0.4821");
  }
  SUBCASE("a total <= 0 is unknown too") {
    Line line("validate", 0, out, {.style = ProgressStyle::tty}, clock);
    run(line, clock, 5, 10ms);
    CHECK(screen(out.str()).back() == "validate  1");
  }
  SUBCASE("plain: a line per interval") {
    Line line("train", std::nullopt, out, {.style = ProgressStyle::plain, .plain_interval = 1s}, clock);
    run(line, clock, 1000, 10ms);  // first update at 10 ms, then lines at 1.01 s, 2.01 s, ...
    line.finish();
    const auto lines = lines_of(out.str());
    REQUIRE(lines.size() == 10);
    CHECK(lines[0] == "train  101  100.0 batch/s");
    CHECK(lines[9] == "train  1000  100.0 batch/s  in 0:10");
  }
}

TEST_CASE("a bar left on screen is ended by the destructor") {
  FakeClock clock;
  std::ostringstream out;
  {
    Line line("train", 10, out, {.style = ProgressStyle::tty}, clock);
    run(line, clock, 3, 10ms);
  }
  CHECK(out.str().back() == '\n');
  std::ostringstream cleared;
  {
    Line line("validate", 10, cleared, {.style = ProgressStyle::tty}, clock);
    run(line, clock, 3, 10ms);
    line.clear();  // made to vanish: nothing left to end
  }
  CHECK(screen(cleared.str()) == std::vector<std::string>{""});
}

TEST_CASE("default style") {
  CHECK_FALSE(dtl::detail::stream_is_tty(nullptr));
  CHECK(dtl::detail::default_progress_style(stdout, true) == ProgressStyle::quiet);
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  CHECK(dtl::detail::default_progress_style(file) == ProgressStyle::plain);
  std::fclose(file);
}

}  // namespace
