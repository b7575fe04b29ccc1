#include "trainer/data/token_data.h"

#include "common/permutation.h"
#include "trainer/data/token_file.h"
#include "trainer/data/vocab_file.h"

namespace hetps {

uint64_t TrainingWindows(uint64_t tokens, uint32_t context) {
  return (tokens + context - 1) / context;
}

uint64_t EvaluationWindows(uint64_t tokens, uint32_t context) {
  return tokens > 0 ? (tokens - 1) / context : 0;
}

uint64_t EpochTokenOffset(uint64_t tokens, uint64_t seed, uint32_t epoch) {
  // A stream of its own, apart from the epoch's sample permutation (common/permutation.cc).
  SplitMix64 rng((seed ^ 0x746f6b656e73ULL) * 0x100000001b3ULL + epoch + 1);
  return rng.Below(tokens);
}

int64_t TrainingWindowStart(const HostDataset& data, uint64_t seed, uint32_t epoch, int64_t window) {
  const uint64_t tokens = data.tokens->size();
  const uint64_t context = static_cast<uint64_t>(data.sample_shape[0]);
  // window * context < tokens + context: no sum here can wrap.
  return static_cast<int64_t>(
      (EpochTokenOffset(tokens, seed, epoch) + static_cast<uint64_t>(window) * context) % tokens);
}

int64_t OrderedWindowStart(const HostDataset& data, int64_t window) {
  return window * data.sample_shape[0];
}

Result<HostDataset> LoadTokens(const DataOptions& options, const std::string& path, DatasetSplit split,
                               uint32_t vocab) {
  std::optional<TokenDType> dtype;
  if (!options.token_dtype.empty()) {
    HETPS_ASSIGN_OR_RETURN(dtype, ParseTokenDType(options.token_dtype, "data.dtype"));
  }
  const std::string vocab_path = VocabularyPathBeside(path);
  std::optional<Vocabulary> beside;
  auto read = ReadVocabulary(vocab_path);
  if (read.ok()) {
    beside = std::move(*read);
  } else if (read.status().code() != Status::Code::kNotFound) {
    return read.status();
  }
  if (!dtype && beside) dtype = beside->dtype;
  HETPS_ASSIGN_OR_RETURN(std::shared_ptr<const TokenFile> file, TokenFile::Open(path, dtype));

  const uint64_t context = options.context;
  if (file->size() < context + 1) {
    return Status::InvalidArgument(path + ": holds " + std::to_string(file->size()) +
                                   " tokens, but data.context " + std::to_string(context) +
                                   " needs at least " + std::to_string(context + 1) +
                                   " (one window and the token after it)");
  }
  std::string vocab_source;
  if (vocab != 0) {
    vocab_source = "the training split's vocabulary";
  } else if (options.vocab != 0) {
    vocab = options.vocab;
    vocab_source = "data.vocab";
  } else if (beside) {
    vocab = beside->size;
    vocab_source = vocab_path;
  }
  if (vocab != 0) {
    const uint64_t largest_id = (uint64_t{1} << (8 * TokenDTypeBytes(file->dtype()))) - 1;
    if (vocab <= largest_id) {
      if (std::optional<uint64_t> at = file->FindAtOrAbove(vocab)) {
        return Status::InvalidArgument(
            path + ": token id " + std::to_string(file->At(*at)) + " at position " + std::to_string(*at) +
            " is at or past the vocabulary of " + std::to_string(vocab) + " ids (from " + vocab_source + ")");
      }
    }
  } else {
    vocab = file->MaxToken() + 1;
  }

  HostDataset data;
  data.source = path;
  data.samples =
      static_cast<int64_t>(split == DatasetSplit::kTrain ? TrainingWindows(file->size(), options.context)
                                                         : EvaluationWindows(file->size(), options.context));
  data.sample_shape = {static_cast<int64_t>(context)};
  data.classes = vocab;
  data.tokens = std::move(file);
  return data;
}

}  // namespace hetps
