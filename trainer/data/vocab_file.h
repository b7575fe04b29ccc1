// Vocabulary: what vocab.json says about the token files beside it (hetps-data tokenize writes it):
// how ids were made ("chars": one id per Unicode character, listed in `tokens`; "bytes": the id
// is the byte), how many there are and the id type of train.bin and val.bin. The token reader
// takes the vocabulary size and id type from it when the job does not give them; sample.py
// decodes generated ids with it.
//
// Plain values and free functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/data/token_file.h"

namespace hetps {

struct Vocabulary {
  std::string kind;                 // "chars" | "bytes" (another writer's vocab.json may say more)
  uint32_t size = 0;                // ids run 0..size-1
  std::optional<TokenDType> dtype;  // the id type of the token files beside it
  std::vector<std::string> tokens;  // chars: id i is tokens[i] (UTF-8); bytes: empty
  uint64_t train_tokens = 0;        // as written by the tokenizer; 0 when not said
  uint64_t val_tokens = 0;
};

// The vocab.json in the directory that holds `data_file`.
std::string VocabularyPathBeside(const std::string& data_file);

// Reads `path`. NotFound when it does not exist; InvalidArgument naming the file when it is not
// JSON, has no positive vocab_size, names an id type other than uint16 and uint32, or a uint16
// type with more than 65536 ids.
Result<Vocabulary> ReadVocabulary(const std::string& path);

// Writes `vocabulary` to `path` (through a temporary file, renamed).
Status WriteVocabulary(const std::string& path, const Vocabulary& vocabulary);

}  // namespace hetps
