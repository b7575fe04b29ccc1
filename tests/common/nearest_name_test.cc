// EditDistance and NearestName: the "did you mean" of unknown flags and job-file keys.
#include "common/nearest_name.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace hetps {
namespace {

CATCH_TEST_CASE("The edit distance counts insertions, deletions, substitutions and swaps",
                "[common][nearest_name]") {
  CATCH_CHECK(EditDistance("epochs", "epochs") == 0);
  CATCH_CHECK(EditDistance("epoch", "epochs") == 1);
  CATCH_CHECK(EditDistance("--schduler", "--scheduler") == 1);
  CATCH_CHECK(EditDistance("--data_dir", "--data-dir") == 1);
  CATCH_CHECK(EditDistance("mdoe", "mode") == 1);
  CATCH_CHECK(EditDistance("Epochs", "epochs") == 0);
  CATCH_CHECK(EditDistance("", "abc") == 3);
  CATCH_CHECK(EditDistance("kitten", "sitting") == 3);
}

CATCH_TEST_CASE("The nearest name is suggested only when it is a likely typo", "[common][nearest_name]") {
  const std::vector<std::string> flags = {"--scheduler", "--device", "--data-dir", "--threads", "--epochs"};
  CATCH_CHECK(NearestName("--schedular", flags) == "--scheduler");
  CATCH_CHECK(NearestName("--sheduler", flags) == "--scheduler");
  CATCH_CHECK(NearestName("--data_dir", flags) == "--data-dir");
  CATCH_CHECK(NearestName("--epoch", flags) == "--epochs");
  CATCH_CHECK(NearestName("--threds", flags) == "--threads");
  CATCH_CHECK(NearestName("--learning-rate", flags).empty());
  CATCH_CHECK(NearestName("--x", flags).empty());
  CATCH_CHECK(NearestName("", flags).empty());
  const std::vector<std::string> keys = {"lr", "momentum", "mode", "model"};
  CATCH_CHECK(NearestName("lt", keys) == "lr");
  CATCH_CHECK(NearestName("x", keys).empty());
  CATCH_CHECK(NearestName("mdoe", keys) == "mode");
  CATCH_CHECK(NearestName("mdoel", keys) == "model");
}

}  // namespace
}  // namespace hetps
