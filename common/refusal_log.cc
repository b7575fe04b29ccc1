#include "common/refusal_log.h"

#include "common/logging.h"

namespace hetps {

uint64_t NoteRefusal(RefusalCounter& counter, const Message& message, Refusal why,
                     const std::string& reason) {
  const uint64_t count = counter.Add(why);
  if (ShouldLogRefusal(count)) {
    HETPS_LOG(WARNING) << "refused a message from " << DescribePeer(message) << " (" << RefusalName(why)
                       << ", " << count << " refused so far): " << reason;
  }
  const bool verified = message.envelope.size() > 0 && VerifyEnvelope(message).ok();
  return verified ? message.env().seq() : 0;
}

}  // namespace hetps
