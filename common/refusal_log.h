// What a process does with a message it refuses, whichever socket it came from: count it under its
// reason, log it (the first few and then rarely, so a flood cannot fill the disk), and find the
// sequence number the Error reply should answer. Called by the thread owning the socket.
#pragma once

#include <cstdint>
#include <string>

#include "common/message.h"
#include "common/refusals.h"

namespace hetps {

// Counts and logs the refusal of `message` for `why`; returns the envelope's seq to answer, or 0
// when the envelope itself cannot be trusted.
uint64_t NoteRefusal(RefusalCounter& counter, const Message& message, Refusal why, const std::string& reason);

}  // namespace hetps
