// StatusWatch: when hetps-status --watch takes the job to have ended; DrawScreen's in-place
// redraw.
#include "http/status_watch.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace hetps {
namespace {

using Catch::Matchers::Contains;

StatusSnapshot InPhase(const std::string& phase) {
  StatusSnapshot s;
  s.phase = phase;
  return s;
}

const Status kNoAnswer = Status::Unavailable("no answer from a scheduler at tcp://127.0.0.1:1 within 500 ms");

CATCH_TEST_CASE("A scheduler that never answered may not have started: the watch goes on", "[http][watch]") {
  StatusWatch watch;
  for (int i = 0; i < 5; ++i) CATCH_CHECK_FALSE(watch.NoAnswer(kNoAnswer, "tcp://127.0.0.1:1"));
  CATCH_CHECK_FALSE(watch.RetryAtOnce());
}

CATCH_TEST_CASE("A scheduler shutting down ends the watch with how the job ended", "[http][watch]") {
  StatusWatch watch;
  CATCH_CHECK_FALSE(watch.Answered(InPhase("training")));
  CATCH_CHECK(watch.Answered(InPhase("shutting down")).value() == "the job has finished");
  StatusSnapshot failed = InPhase("shutting down");
  failed.failed = true;
  failed.failure = "server 0 was lost";
  CATCH_CHECK(StatusWatch().Answered(failed).value() == "the job failed: server 0 was lost");
}

CATCH_TEST_CASE("A scheduler that answered and no longer does has ended the job", "[http][watch]") {
  CATCH_SECTION("while training: after a second attempt at once") {
    StatusWatch watch;
    watch.Answered(InPhase("training"));
    CATCH_CHECK_FALSE(watch.NoAnswer(kNoAnswer, "tcp://127.0.0.1:1"));
    CATCH_CHECK(watch.RetryAtOnce());
    auto ended = watch.NoAnswer(kNoAnswer, "tcp://127.0.0.1:1");
    CATCH_REQUIRE(ended);
    CATCH_CHECK_THAT(*ended,
                     Contains("the job has ended: the scheduler at tcp://127.0.0.1:1 no longer answers"));
  }
  CATCH_SECTION("an answer in between starts the count again") {
    StatusWatch watch;
    watch.Answered(InPhase("training"));
    CATCH_CHECK_FALSE(watch.NoAnswer(kNoAnswer, "x"));
    watch.Answered(InPhase("training"));
    CATCH_CHECK_FALSE(watch.NoAnswer(kNoAnswer, "x"));
  }
  CATCH_SECTION("after the final evaluation: at once") {
    StatusWatch watch;
    watch.Answered(InPhase("final evaluation"));
    CATCH_CHECK(watch.NoAnswer(kNoAnswer, "x"));
  }
}

std::string Drawn(bool terminal) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&data, &size);
  DrawScreen(out, terminal, {"a", "b"});
  DrawScreen(out, terminal, {"c"});
  std::fclose(out);
  std::string text(data, size);
  std::free(data);
  return text;
}

CATCH_TEST_CASE("On a terminal each screen is drawn over the last, elsewhere after it", "[http][watch]") {
  CATCH_CHECK(Drawn(true) == "\033[Ha\033[K\nb\033[K\n\033[J\033[Hc\033[K\n\033[J");
  CATCH_CHECK(Drawn(false) == "a\nb\n\nc\n\n");
}

}  // namespace
}  // namespace hetps
