// RenderStatusJson / ParseStatusJson / MemberTableLines, and the status page's content.
#include "http/status_json.h"

#include <catch2/catch.hpp>

#include "http/status_page.h"

namespace hetps {
namespace {

StatusSnapshot Sample() {
  StatusSnapshot s;
  s.mode = "sync";
  s.model = "cnn";
  s.optimizer = "adam";
  s.async_batch = "whole";
  s.epochs = 2;
  s.phase = "training";
  s.progress_ratio = 0.5;
  s.samples_per_second = 1234;
  MemberStatus server;
  server.role = "server";
  server.host = "box";
  server.device = "cpu";
  server.state = "serving";
  server.staleness_counts = {3, 1};
  server.staleness_sum = 1;
  server.round_seconds.Observe(0.125);
  server.round_seconds.Observe(3);
  server.apply_seconds.Observe(0.0005);
  s.members.push_back(server);
  MemberStatus fast, slow;
  fast.role = slow.role = "trainer";
  fast.host = "desktop";
  fast.device = "cuda";
  fast.state = slow.state = "training";
  fast.samples_per_second = 900;
  fast.pace_samples_per_second = 1500.5;
  fast.batch_share = 0.75;
  slow.rank = 1;
  slow.host = "mac<mini>";
  slow.device = "mps";
  slow.samples_per_second = 300;
  slow.batch_share = 0.25;
  slow.bytes_pushed = uint64_t{1} << 40;
  s.members.push_back(fast);
  s.members.push_back(slow);
  s.evaluations.push_back({0, false, 12.5, 60000, 0.4, 0.86});
  s.history.push_back({1, 1200, 2.0, {{0, 900}, {1, 300}}});
  s.history.push_back({3, 1250, 1.5, {{0, 950}, {1, 300}}});
  return s;
}

CATCH_TEST_CASE("The status JSON reads back as the snapshot it was made from", "[http][status]") {
  const StatusSnapshot s = Sample();
  auto parsed = ParseStatusJson(RenderStatusJson(s), "test");
  CATCH_REQUIRE(parsed.ok());
  CATCH_CHECK(RenderStatusJson(*parsed) == RenderStatusJson(s));
  CATCH_CHECK(parsed->async_batch == "whole");
  CATCH_CHECK(parsed->members.size() == 3);
  CATCH_CHECK(parsed->members[2].bytes_pushed == uint64_t{1} << 40);
  CATCH_CHECK(parsed->members[1].pace_samples_per_second == 1500.5);
  CATCH_CHECK(parsed->members[0].round_seconds.counts == s.members[0].round_seconds.counts);
  CATCH_CHECK(parsed->members[0].round_seconds.sum == 3.125);
  CATCH_CHECK(parsed->members[0].apply_seconds.count() == 1);
  CATCH_CHECK(parsed->history[1].trainer_speed.at(0) == 950);
}

CATCH_TEST_CASE("A server's round and apply seconds are in /status with their buckets' bounds",
                "[http][status]") {
  const std::string json = RenderStatusJson(Sample());
  CATCH_CHECK(json.find("\"round_seconds\": {") != std::string::npos);
  CATCH_CHECK(json.find("\"apply_seconds\": {") != std::string::npos);
  CATCH_CHECK(json.find("\"bucket_bounds\": [") != std::string::npos);
  CATCH_CHECK(json.find("\"sum\": 3.125") != std::string::npos);
  // A document with more buckets than this build knows reads back with its own number.
  std::string longer = json;
  const size_t at = longer.find("\"counts\": [");
  CATCH_REQUIRE(at != std::string::npos);
  longer.insert(at + std::string("\"counts\": [").size(),
                "7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, ");
  auto parsed = ParseStatusJson(longer, "test");
  CATCH_REQUIRE(parsed.ok());
  CATCH_CHECK(parsed->members[0].round_seconds.counts.size() == kSecondsBuckets);
}

CATCH_TEST_CASE("A document that is not a status is refused naming its source", "[http][status]") {
  auto parsed = ParseStatusJson("{\"hello\": 1}", "http://x/status");
  CATCH_REQUIRE(!parsed.ok());
  CATCH_CHECK(parsed.status().message().find("http://x/status") != std::string::npos);
  CATCH_CHECK(!ParseStatusJson("<html>", "y").ok());
}

CATCH_TEST_CASE("The member table has a line per member with its host and device", "[http][status]") {
  const auto lines = MemberTableLines(Sample());
  CATCH_REQUIRE(lines.size() == 2 + 3);
  CATCH_CHECK(lines[3].find("desktop") != std::string::npos);
  CATCH_CHECK(lines[3].find("cuda") != std::string::npos);
  CATCH_CHECK(lines[4].find("mps") != std::string::npos);
  CATCH_CHECK(lines[4].find("25%") != std::string::npos);
}

CATCH_TEST_CASE(
    "The page lists every member, marks the slow trainer, escapes text and needs nothing external",
    "[http][status]") {
  const std::string page = RenderStatusPage(Sample());
  CATCH_CHECK(page.find("mac&lt;mini&gt;") != std::string::npos);
  CATCH_CHECK(page.find("mac<mini>") == std::string::npos);
  CATCH_CHECK(page.find("<tr class=\"slow\"><td>trainer 1") != std::string::npos);
  CATCH_CHECK(page.find("<td>trainer 0") != std::string::npos);
  CATCH_CHECK(page.find("<td>server 0") != std::string::npos);
  CATCH_CHECK(page.find("<svg") != std::string::npos);
  CATCH_CHECK(page.find("<polyline") != std::string::npos);
  CATCH_CHECK(page.find("http-equiv=\"refresh\"") != std::string::npos);
  CATCH_CHECK(page.find("src=") == std::string::npos);
  CATCH_CHECK(page.find("<script") == std::string::npos);
}

CATCH_TEST_CASE("A plot of one point shows it, and a plot of none says so", "[http][status]") {
  const std::string one = SvgPlot("test accuracy", {{"accuracy", "#000", {{12.5, 0.86}}}});
  CATCH_CHECK(one.find("<circle") != std::string::npos);
  CATCH_CHECK(one.find("no data yet") == std::string::npos);
  const std::string none = SvgPlot("test accuracy", {{"accuracy", "#000", {}}});
  CATCH_CHECK(none.find("no data yet") != std::string::npos);
}

}  // namespace
}  // namespace hetps
