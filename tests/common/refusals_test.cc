// Refusal counts by reason (common/refusals.h): names, sums and the trip over the wire.
#include "common/refusals.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

namespace hetps {
namespace {

CATCH_TEST_CASE("Every refusal reason has its own name", "[common][refusals]") {
  std::set<std::string> names;
  for (size_t i = 0; i < kRefusalReasons; ++i) names.insert(RefusalName(static_cast<Refusal>(i)));
  CATCH_CHECK(names.size() == kRefusalReasons);
  for (const char* name : {"unverified", "oversized", "impostor", "unauthenticated", "over_limit"}) {
    CATCH_CHECK(names.count(name) == 1);
  }
}

CATCH_TEST_CASE("Refusal counts add up and survive the wire", "[common][refusals]") {
  RefusalCounter counter;
  CATCH_CHECK(counter.Add(Refusal::Impostor) == 1);
  CATCH_CHECK(counter.Add(Refusal::Impostor) == 2);
  CATCH_CHECK(counter.Add(Refusal::Oversized) == 3);
  const RefusalTally tally = counter.Snapshot();
  CATCH_CHECK(tally.of(Refusal::Impostor) == 2);
  CATCH_CHECK(tally.of(Refusal::Oversized) == 1);
  CATCH_CHECK(tally.total() == 3);

  flatbuffers::FlatBufferBuilder fbb;
  auto counts = tally.ToWire(fbb);
  fbb.Finish(counts);
  const auto* vector = flatbuffers::GetRoot<flatbuffers::Vector<flatbuffers::Offset<wire::RefusalCount>>>(
      fbb.GetBufferPointer());
  CATCH_CHECK(vector->size() == 2);  // only the non-zero reasons
  RefusalTally back = RefusalTally::FromWire(vector);
  CATCH_CHECK(back.counts == tally.counts);
  back.Add(tally);
  CATCH_CHECK(back.of(Refusal::Impostor) == 4);
  CATCH_CHECK(RefusalTally::FromWire(nullptr).total() == 0);
}

}  // namespace
}  // namespace hetps
