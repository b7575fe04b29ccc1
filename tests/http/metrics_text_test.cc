// RenderMetrics: the Prometheus exposition of a snapshot (names, types, labels, histogram).
#include "http/metrics_text.h"

#include <catch2/catch.hpp>

namespace hetps {
namespace {

StatusSnapshot TwoTrainersOneServer() {
  StatusSnapshot s;
  s.mode = "async";
  s.model = "mlp";
  s.progress_ratio = 0.25;
  MemberStatus server;
  server.role = "server";
  server.host = "box \"a\"";
  server.device = "cpu";
  server.pushes = 40;
  server.staleness_counts = {10, 20, 5, 0, 5};  // 40 pushes: staleness 0,1,2 and 4
  server.staleness_sum = 0 * 10 + 1 * 20 + 2 * 5 + 4 * 5;
  server.refusals = {{"unverified", 3}};
  for (double seconds : {0.02, 0.03, 0.2}) server.round_seconds.Observe(seconds);
  for (double seconds : {0.00004, 0.0003, 0.0004, 120.0}) server.apply_seconds.Observe(seconds);
  s.members.push_back(server);
  for (uint32_t rank : {0u, 1u}) {
    MemberStatus t;
    t.role = "trainer";
    t.rank = rank;
    t.host = "h";
    t.device = rank == 0 ? "cuda" : "cpu";
    t.samples = 1000 * (rank + 1);
    t.loss = 0.5;
    t.pace_samples_per_second = 400 * (rank + 1);
    s.members.push_back(t);
  }
  return s;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

CATCH_TEST_CASE(
    "Every family has HELP and TYPE once, and per-member series carry role, rank, host and device",
    "[http][metrics]") {
  const std::string text = RenderMetrics(TwoTrainersOneServer());
  CATCH_CHECK(Has(text, "# TYPE hetps_trainer_samples_total counter"));
  CATCH_CHECK(
      Has(text, "hetps_trainer_samples_total{role=\"trainer\",rank=\"0\",host=\"h\",device=\"cuda\"} 1000"));
  CATCH_CHECK(
      Has(text, "hetps_trainer_samples_total{role=\"trainer\",rank=\"1\",host=\"h\",device=\"cpu\"} 2000"));
  CATCH_CHECK(Has(text, "# TYPE hetps_trainer_loss gauge"));
  CATCH_CHECK(Has(
      text,
      "hetps_trainer_pace_samples_per_second{role=\"trainer\",rank=\"1\",host=\"h\",device=\"cpu\"} 800"));
  CATCH_CHECK(Has(text, "# TYPE hetps_server_pushes_total counter"));
  CATCH_CHECK(Has(text, "hetps_job_progress_ratio 0.25"));
  // A quote in a label value is escaped.
  CATCH_CHECK(text.find("host=\"box \\\"a\\\"\"") != std::string::npos);
  size_t types = 0;
  for (size_t at = text.find("# TYPE hetps_member_up "); at != std::string::npos;
       at = text.find("# TYPE hetps_member_up ", at + 1)) {
    ++types;
  }
  CATCH_CHECK(types == 1);
}

CATCH_TEST_CASE("The staleness histogram is cumulative, ends with +Inf and carries the exact sum",
                "[http][metrics]") {
  const std::string text = RenderMetrics(TwoTrainersOneServer());
  const std::string labels = "role=\"server\",rank=\"0\",host=\"box \\\"a\\\"\",device=\"cpu\"";
  CATCH_CHECK(Has(text, "# TYPE hetps_staleness histogram"));
  CATCH_CHECK(Has(text, "hetps_staleness_bucket{" + labels + ",le=\"0\"} 10"));
  CATCH_CHECK(Has(text, "hetps_staleness_bucket{" + labels + ",le=\"1\"} 30"));
  CATCH_CHECK(Has(text, "hetps_staleness_bucket{" + labels + ",le=\"3\"} 35"));
  CATCH_CHECK(Has(text, "hetps_staleness_bucket{" + labels + ",le=\"4\"} 40"));
  CATCH_CHECK(Has(text, "hetps_staleness_bucket{" + labels + ",le=\"+Inf\"} 40"));
  CATCH_CHECK(Has(text, "hetps_staleness_sum{" + labels + "} 50"));
  CATCH_CHECK(Has(text, "hetps_staleness_count{" + labels + "} 40"));
  CATCH_CHECK(Has(text, "hetps_refusals_total{" + labels + ",reason=\"unverified\"} 3"));
}

CATCH_TEST_CASE("A server's round and apply seconds are cumulative histograms in seconds with every bucket",
                "[http][metrics]") {
  const std::string text = RenderMetrics(TwoTrainersOneServer());
  const std::string labels = "role=\"server\",rank=\"0\",host=\"box \\\"a\\\"\",device=\"cpu\"";
  CATCH_CHECK(Has(text, "# TYPE hetps_server_round_seconds histogram"));
  CATCH_CHECK(Has(text, "hetps_server_round_seconds_bucket{" + labels + ",le=\"0.01\"} 0"));
  CATCH_CHECK(Has(text, "hetps_server_round_seconds_bucket{" + labels + ",le=\"0.025\"} 1"));
  CATCH_CHECK(Has(text, "hetps_server_round_seconds_bucket{" + labels + ",le=\"0.05\"} 2"));
  CATCH_CHECK(Has(text, "hetps_server_round_seconds_bucket{" + labels + ",le=\"0.25\"} 3"));
  CATCH_CHECK(Has(text, "hetps_server_round_seconds_bucket{" + labels + ",le=\"60\"} 3"));
  CATCH_CHECK(Has(text, "hetps_server_round_seconds_bucket{" + labels + ",le=\"+Inf\"} 3"));
  CATCH_CHECK(Has(text, "hetps_server_round_seconds_count{" + labels + "} 3"));
  CATCH_CHECK(text.find("hetps_server_round_seconds_sum{" + labels + "} 0.25") != std::string::npos);
  CATCH_CHECK(Has(text, "# TYPE hetps_server_apply_seconds histogram"));
  CATCH_CHECK(Has(text, "hetps_server_apply_seconds_bucket{" + labels + ",le=\"1e-05\"} 0"));
  CATCH_CHECK(Has(text, "hetps_server_apply_seconds_bucket{" + labels + ",le=\"5e-05\"} 1"));
  CATCH_CHECK(Has(text, "hetps_server_apply_seconds_bucket{" + labels + ",le=\"0.0005\"} 3"));
  // A duration past the last bound counts only in +Inf.
  CATCH_CHECK(Has(text, "hetps_server_apply_seconds_bucket{" + labels + ",le=\"60\"} 3"));
  CATCH_CHECK(Has(text, "hetps_server_apply_seconds_bucket{" + labels + ",le=\"+Inf\"} 4"));
  CATCH_CHECK(Has(text, "hetps_server_apply_seconds_count{" + labels + "} 4"));
  // One bucket line per bound and +Inf, for each histogram.
  size_t buckets = 0;
  for (size_t at = text.find("hetps_server_round_seconds_bucket{"); at != std::string::npos;
       at = text.find("hetps_server_round_seconds_bucket{", at + 1)) {
    ++buckets;
  }
  CATCH_CHECK(buckets == kSecondsBuckets);
  // Trainers have none.
  CATCH_CHECK(text.find("hetps_server_apply_seconds_count{role=\"trainer\"") == std::string::npos);
}

CATCH_TEST_CASE("A job without members yet exposes the job's families only", "[http][metrics]") {
  const std::string text = RenderMetrics(StatusSnapshot{});
  CATCH_CHECK(Has(text, "hetps_job_progress_ratio 0"));
  CATCH_CHECK(text.find("hetps_trainer_samples_total") == std::string::npos);
  CATCH_CHECK(text.find("hetps_staleness") == std::string::npos);
  CATCH_CHECK(text.find("hetps_server_round_seconds") == std::string::npos);
}

}  // namespace
}  // namespace hetps
