// Every message kind with distinctive field values, for the tests of common/message.h: how to build
// each member of the Body union and how to check it on arrival. The cases are grouped by the
// message families of schemas/messages.fbs, one file each (tests/common/message_cases_*.cc). The
// checks assert with Catch2, so they run inside a test case.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "common/message.h"

namespace hetps::testing {

using Builder = flatbuffers::FlatBufferBuilder;

// How to build one message kind with distinctive field values, and how to check them on arrival.
struct KindCase {
  std::function<flatbuffers::Offset<void>(Builder&)> build;
  std::function<void(const Message&)> check;
};

// The elements of a FlatBuffers vector, which must be present.
template <typename T>
std::vector<T> Vec(const flatbuffers::Vector<T>* v) {
  CATCH_REQUIRE(v != nullptr);
  return std::vector<T>(v->begin(), v->end());
}

// One case per member of the Body union. A kind added to the schema without a case in its family
// makes "Every message kind survives a seal and verify round trip" fail.
std::map<wire::Body, KindCase> AllKinds();

// The families AllKinds joins: joining, the shard map, membership, heartbeats, leaving, errors and
// status; data chunks, progress, evaluation, rebalancing and mode switches; weights and gradients
// between trainers and servers; checkpoints and recovery from a lost server; the samples and the
// TorchScript file the scheduler serves to trainers.
std::map<wire::Body, KindCase> ControlCases();
std::map<wire::Body, KindCase> TrainingCases();
std::map<wire::Body, KindCase> DataPlaneCases();
std::map<wire::Body, KindCase> RecoveryCases();
std::map<wire::Body, KindCase> ServedCases();

// Seals the message of case `c` with `sender`.
zmq::message_t Seal(Sender& sender, wire::Body kind, const KindCase& c);

}  // namespace hetps::testing
