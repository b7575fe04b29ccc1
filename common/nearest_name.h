// "Did you mean ...?" for a name a user mistyped: the known name nearest to it by edit distance,
// for unknown command-line flags (common/cli.h) and unknown job-file keys (common/yaml_fields.h).
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

namespace hetps {

// The number of single-character insertions, deletions, substitutions and swaps of two
// neighbours that turn `a` into `b` (optimal string alignment distance), ignoring case.
size_t EditDistance(const std::string& a, const std::string& b);

// The candidate nearest to `word`, or "" when none is near enough to be a likely typo of it (at
// most 1 edit for names of up to 4 characters, else at most a third of the word's length, and
// never as many edits as the word has characters). Ties go to the earlier candidate.
std::string NearestName(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace hetps
