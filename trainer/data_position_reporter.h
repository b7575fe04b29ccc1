// DataPositionReporter: a trainer's answer to the scheduler's checkpoint requests. A checkpoint
// records where the data stood at its cut, so the trainer reports (DataPosition) which chunks it
// had trained and how far into the ones it holds: in sync mode at the start of the step the
// request names, the round at which every server cuts; otherwise at the start of its next step,
// before the servers are asked to cut.
//
// Owned by the trainer's loop thread with the control channel it sends on.
#pragma once

#include <cstdint>
#include <optional>

#include "common/control_channel.h"
#include "common/message.h"
#include "common/status.h"
#include "trainer/chunk_sampler.h"

namespace hetps {

class DataPositionReporter {
 public:
  // `sync`: cuts lie at a named step.
  DataPositionReporter(ControlChannel* control, Sender* sender, bool sync)
      : control_(control), sender_(sender), sync_(sync) {}

  // A CheckpointRequest from the scheduler; a later one replaces an earlier one not yet answered.
  void Note(const wire::CheckpointRequest& request);

  // Called between steps, before the data of step `clock` is taken: reports the position when a
  // request is due (in sync mode also one whose step has passed, which the scheduler then
  // refuses, rather than never answering). `idle`: no more steps come (the trainer is done), so a
  // pending request is answered now.
  Status MaybeReport(uint64_t clock, uint32_t epoch, uint64_t samples, const ChunkSampler& sampler,
                     bool idle = false);

  // Forgets a request not yet answered (the job went back to a checkpoint).
  void Forget() { pending_.reset(); }

 private:
  struct Pending {
    uint32_t checkpoint = 0;
    uint64_t round = 0;
    bool at_round = false;
  };

  ControlChannel* control_;
  Sender* sender_;
  bool sync_;
  std::optional<Pending> pending_;
};

}  // namespace hetps
