#include "scheduler/progress_display.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A temporary file the display writes to; Contents() reads everything written so far.
class Capture {
 public:
  Capture() : file_(std::tmpfile()) { CATCH_REQUIRE(file_ != nullptr); }
  ~Capture() { std::fclose(file_); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  std::FILE* file() { return file_; }

  std::string Contents() {
    std::fflush(file_);
    std::rewind(file_);
    std::string text;
    char buffer[4096];
    size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) text.append(buffer, got);
    std::fseek(file_, 0, SEEK_END);
    return text;
  }

 private:
  std::FILE* file_;
};

Member Trainer(uint32_t rank, const std::string& device, uint64_t clock, uint64_t samples, double loss,
               double samples_per_second) {
  Member m;
  m.role = wire::Role::Trainer;
  m.rank = rank;
  m.device = device;
  m.progress.clock = clock;
  m.progress.samples = samples;
  m.progress.loss = loss;
  m.progress.samples_per_second = samples_per_second;
  return m;
}

JobView Job() {
  JobView job;
  job.mode = "sync";
  job.model = "cnn";
  job.epochs = 2;
  job.servers = 2;
  job.samples_per_epoch = 1000;
  job.elapsed_seconds = 65;
  job.phase = "training";
  return job;
}

CATCH_TEST_CASE("WithThousands groups digits in threes", "[scheduler][progress_display]") {
  CATCH_CHECK(WithThousands(0) == "0");
  CATCH_CHECK(WithThousands(7) == "7");
  CATCH_CHECK(WithThousands(999) == "999");
  CATCH_CHECK(WithThousands(1000) == "1,000");
  CATCH_CHECK(WithThousands(12345) == "12,345");
  CATCH_CHECK(WithThousands(999999) == "999,999");
  CATCH_CHECK(WithThousands(1234567) == "1,234,567");
  CATCH_CHECK(WithThousands(std::numeric_limits<uint64_t>::max()) == "18,446,744,073,709,551,615");
}

CATCH_TEST_CASE("FormatDuration shows minutes and seconds, and hours when needed",
                "[scheduler][progress_display]") {
  CATCH_CHECK(FormatDuration(0) == "0:00");
  CATCH_CHECK(FormatDuration(5) == "0:05");
  CATCH_CHECK(FormatDuration(59.9) == "0:59");
  CATCH_CHECK(FormatDuration(65) == "1:05");
  CATCH_CHECK(FormatDuration(3599) == "59:59");
  CATCH_CHECK(FormatDuration(3600) == "1:00:00");
  CATCH_CHECK(FormatDuration(3723) == "1:02:03");
  CATCH_CHECK(FormatDuration(100 * 3600 + 1) == "100:00:01");
  CATCH_CHECK(FormatDuration(-5) == "0:00");
}

CATCH_TEST_CASE("ProgressLines shows the job, the totals and one line per trainer",
                "[scheduler][progress_display]") {
  Member fast = Trainer(0, "cpu", 10, 300, 0.5, 100);
  Member dead = Trainer(1, "cuda:0", 5, 200, 1.0, 50);
  dead.alive = false;
  Member done = Trainer(2, "cpu", 3, 100, 0.25, 25);
  done.done = true;
  const std::vector<std::string> lines = ProgressLines(Job(), {&fast, &dead, &done});
  CATCH_REQUIRE(lines.size() == 2 + 3);
  std::string block;
  for (const std::string& line : lines) block += line + "\n";
  CATCH_INFO(block);

  // 600 of 2 x 1000 samples: 30%, 7 of 24 bar cells.
  CATCH_CHECK(Contains(lines[0], "sync cnn"));
  CATCH_CHECK(Contains(lines[0], "epoch 1/2"));
  CATCH_CHECK(Contains(lines[0], "[#######.................]"));
  CATCH_CHECK(Contains(lines[0], " 30%"));
  CATCH_CHECK(Contains(lines[0], "1:05 elapsed"));
  CATCH_CHECK(Contains(lines[0], "training"));

  // Totals: the largest step, all samples, the rate of trainers still working, the mean loss
  // of live trainers that have trained.
  CATCH_CHECK(Contains(lines[1], "all trainers"));
  CATCH_CHECK(Contains(lines[1], "step      10"));
  CATCH_CHECK(Contains(lines[1], "samples        600"));
  CATCH_CHECK(Contains(lines[1], "100 samples/s"));
  CATCH_CHECK(Contains(lines[1], "loss 0.3750"));

  CATCH_CHECK(Contains(lines[2], "trainer 0"));
  CATCH_CHECK(Contains(lines[2], "loss 0.5000"));
  CATCH_CHECK(Contains(lines[2], "cpu"));
  CATCH_CHECK_FALSE(Contains(lines[2], "(dead)"));
  CATCH_CHECK_FALSE(Contains(lines[2], "(done)"));
  CATCH_CHECK(Contains(lines[3], "trainer 1"));
  CATCH_CHECK(Contains(lines[3], "cuda:0"));
  CATCH_CHECK(lines[3].size() >= 7);
  CATCH_CHECK(lines[3].substr(lines[3].size() - 7) == " (dead)");
  CATCH_CHECK(Contains(lines[4], "trainer 2"));
  CATCH_CHECK(lines[4].substr(lines[4].size() - 7) == " (done)");
}

CATCH_TEST_CASE("In mode diloco ProgressLines counts rounds and shows each trainer's inner steps",
                "[scheduler][progress_display]") {
  JobView job = Job();
  job.mode = "diloco";
  job.rounds = true;
  job.detail = "12 rounds, 4.3 MB moved per round";
  Member fast = Trainer(0, "cuda:0", 12, 300, 0.5, 100);
  fast.progress.last_round_inner_steps = 160;
  Member slow = Trainer(1, "mps", 12, 100, 0.6, 30);
  slow.progress.last_round_inner_steps = 40;
  const std::vector<std::string> lines = ProgressLines(job, {&fast, &slow});
  CATCH_REQUIRE(lines.size() == 3 + 2);
  CATCH_CHECK(Contains(lines[1], "round      12"));
  CATCH_CHECK(Contains(lines[2], "12 rounds, 4.3 MB moved per round"));
  CATCH_CHECK(Contains(lines[3], "round      12"));
  CATCH_CHECK(Contains(lines[3], "160 inner steps"));
  CATCH_CHECK(Contains(lines[4], "40 inner steps"));
  CATCH_CHECK_FALSE(Contains(lines[4], "batch"));
}

CATCH_TEST_CASE("ProgressLines copes with no trainers, no progress and overshoot",
                "[scheduler][progress_display]") {
  CATCH_SECTION("no trainers yet") {
    JobView job = Job();
    job.phase = "waiting for members";
    const std::vector<std::string> lines = ProgressLines(job, {});
    CATCH_REQUIRE(lines.size() == 2);
    CATCH_CHECK(Contains(lines[0], "  0%"));
    CATCH_CHECK(Contains(lines[0], "[........................]"));
    CATCH_CHECK(Contains(lines[0], "waiting for members"));
    CATCH_CHECK(Contains(lines[1], "loss -"));
  }
  CATCH_SECTION("a trainer that has not stepped shows no loss") {
    Member idle = Trainer(4, "cpu", 0, 0, 0, 0);
    const std::vector<std::string> lines = ProgressLines(Job(), {&idle});
    CATCH_REQUIRE(lines.size() == 3);
    CATCH_CHECK(Contains(lines[2], "trainer 4"));
    CATCH_CHECK(Contains(lines[2], "loss -"));
  }
  CATCH_SECTION("once every trainer is done, the rate is that of the whole job") {
    Member done = Trainer(0, "cpu", 100, 6500, 0.2, 0);
    done.done = true;
    const std::vector<std::string> lines = ProgressLines(Job(), {&done});  // 1:05 elapsed
    CATCH_CHECK(Contains(lines[1], "100 samples/s"));
  }
  CATCH_SECTION("more samples than the job has are shown as 100%") {
    Member busy = Trainer(0, "cpu", 5000, 1234567, 0.1, 2500);
    busy.progress.epoch = 1;
    const std::vector<std::string> lines = ProgressLines(Job(), {&busy});
    CATCH_CHECK(Contains(lines[0], "100%"));
    CATCH_CHECK(Contains(lines[0], "epoch 2/2"));
    CATCH_CHECK(Contains(lines[0], "[########################]"));
    CATCH_CHECK(Contains(lines[1], "1,234,567"));
    CATCH_CHECK(Contains(lines[1], "2,500 samples/s"));
    CATCH_CHECK(Contains(lines[2], "5,000"));
  }
}

CATCH_TEST_CASE("Plain progress output is rate-limited unless forced", "[scheduler][progress_display]") {
  Capture capture;
  CATCH_CHECK_FALSE(IsTerminal(capture.file()));
  CATCH_SECTION("within the interval") {
    ProgressDisplay display(capture.file(), false, std::chrono::hours(1));
    CATCH_CHECK_FALSE(display.in_place());
    display.Show({"a", "b"});
    display.Show({"skipped"});
    display.Show({"forced"}, /*force=*/true);
    display.Show({"skipped again"});
    display.Note("evaluation: accuracy 0.91");
    CATCH_CHECK(capture.Contents() == "a\nb\nforced\nevaluation: accuracy 0.91\n");
  }
  CATCH_SECTION("after the interval") {
    ProgressDisplay display(capture.file(), false, std::chrono::milliseconds(20));
    display.Show({"first"});
    display.Show({"too soon"});
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    display.Show({"second"});
    CATCH_CHECK(capture.Contents() == "first\nsecond\n");
  }
  CATCH_SECTION("a zero interval prints every time") {
    ProgressDisplay display(capture.file(), false, std::chrono::milliseconds(0));
    display.Show({"1"});
    display.Show({"2"});
    CATCH_CHECK(capture.Contents() == "1\n2\n");
  }
}

CATCH_TEST_CASE("In-place progress output moves up over the old block and clears it",
                "[scheduler][progress_display]") {
  Capture capture;
  ProgressDisplay display(capture.file(), true, std::chrono::hours(1));
  CATCH_CHECK(display.in_place());
  std::string expected;

  display.Show({"l1", "l2"});
  expected += "l1\nl2\n";  // nothing drawn yet: nothing to erase
  CATCH_CHECK(capture.Contents() == expected);

  display.Show({"m1", "m2", "m3"});  // not rate-limited
  expected += "\x1b[2F\x1b[Jm1\nm2\nm3\n";
  CATCH_CHECK(capture.Contents() == expected);

  display.Note("note");  // stays above the redrawn block
  expected += "\x1b[3F\x1b[Jnote\nm1\nm2\nm3\n";
  CATCH_CHECK(capture.Contents() == expected);

  display.Show({"x"});
  expected += "\x1b[3F\x1b[Jx\n";
  CATCH_CHECK(capture.Contents() == expected);

  display.Show({});
  expected += "\x1b[1F\x1b[J";
  display.Show({"y"});
  expected += "y\n";
  CATCH_CHECK(capture.Contents() == expected);
}

}  // namespace
}  // namespace hetps
