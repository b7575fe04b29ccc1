// The tokenizers of `hetps-data tokenize`, which need nothing from the internet: text files made
// into the token files of data.format tokens (train.bin, val.bin and vocab.json in one directory).
//   chars: one id per Unicode character (the input read as UTF-8; a byte that is not valid
//          UTF-8 becomes U+FFFD); the vocabulary is the characters the input holds, in code point
//          order, listed in vocab.json.
//   bytes: the id is the byte, 0..255, whatever the input.
// The inputs are read in the order given (a directory: its files, recursively, in path order)
// and end to end make one stream of ids, of which the last `val_percent` % becomes val.bin. Ids
// are uint16 when the vocabulary fits in 65536, else uint32; vocab.json says which. Files are
// read twice as streams (once for the vocabulary and the count, once to write), never whole, so
// a corpus larger than memory works.
//
// Free functions; any thread may call them (two calls must not write the same directory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/data/vocab_file.h"

namespace hetps {

struct TokenizeOptions {
  std::string kind = "chars";       // chars | bytes
  std::vector<std::string> inputs;  // files and directories, read in this order
  std::string include;              // a directory's files must match this name pattern (fnmatch,
                                    // e.g. "*.py"); empty: every file
  std::string out_dir;              // created if missing
  double val_percent = 10;          // the last this % of the tokens; in (0, 100)
};

struct TokenizeReport {
  Vocabulary vocabulary;      // as written to vocab.json
  uint64_t files = 0;         // input files read
  uint64_t input_bytes = 0;   // over all of them
  uint64_t invalid_utf8 = 0;  // chars: bytes that were not UTF-8, each read as U+FFFD
};

// The files `options` names, in the order they are read. InvalidArgument naming the path for an
// input that does not exist, and when no file is left.
Result<std::vector<std::string>> TokenizerInputs(const TokenizeOptions& options);

// Writes out_dir/train.bin, out_dir/val.bin and out_dir/vocab.json. InvalidArgument for a bad
// kind or val_percent, or an input too small to give both files at least 2 tokens; IoError naming
// the file that could not be read or written.
Result<TokenizeReport> Tokenize(const TokenizeOptions& options);

}  // namespace hetps
