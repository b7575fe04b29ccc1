#include "tests/common/message_cases.h"

namespace hetps::testing {

std::map<wire::Body, KindCase> AllKinds() {
  std::map<wire::Body, KindCase> cases;
  for (const auto& family : {ControlCases, TrainingCases, DataPlaneCases, RecoveryCases, ServedCases}) {
    cases.merge(family());
  }
  return cases;
}

zmq::message_t Seal(Sender& sender, wire::Body kind, const KindCase& c) {
  Builder fbb;
  const flatbuffers::Offset<void> body = c.build(fbb);
  return sender.Seal(fbb, kind, body);
}

}  // namespace hetps::testing
