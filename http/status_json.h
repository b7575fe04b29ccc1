// StatusSnapshot as JSON: what GET /status serves and hetps-status reads. ParseStatusJson reads
// back what RenderStatusJson wrote (every field), so hetps-status needs no second definition.
// Pure functions; any thread.
#pragma once

#include <string>

#include "common/status.h"
#include "http/status_snapshot.h"

namespace hetps {

std::string RenderStatusJson(const StatusSnapshot& snapshot);

// InvalidArgument naming `source` and the field when `text` is not such a document.
Result<StatusSnapshot> ParseStatusJson(const std::string& text, const std::string& source);

// The member table hetps-status prints and the page shows: a header line, then one line per member.
std::vector<std::string> MemberTableLines(const StatusSnapshot& snapshot);

}  // namespace hetps
