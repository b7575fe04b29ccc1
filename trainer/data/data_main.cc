// hetps-data: prepares data for hetps jobs. `hetps-data tokenize` makes text into the token files
// of data.format tokens (trainer/data/tokenizer.h), with nothing from the internet.
#include <cstdio>

#include "common/cli.h"
#include "trainer/data/tokenizer.h"

int main(int argc, char** argv) {
  CLI::App app("hetps data: prepares data for hetps jobs", "hetps-data");
  app.require_subcommand(1);
  CLI::App* tokenize = app.add_subcommand(
      "tokenize",
      "Makes text files into DIR/train.bin, DIR/val.bin (token ids, uint16 when the vocabulary fits in "
      "65536, else uint32) and DIR/vocab.json, for a job's data: {format: tokens, train: DIR/train.bin, "
      "test: DIR/val.bin}. The inputs, end to end, are one stream; the last --val-percent of it is val.bin.");
  hetps::TokenizeOptions options;
  bool chars = false, bytes = false;
  tokenize->add_flag("--chars", chars, "One id per Unicode character (the input read as UTF-8)");
  tokenize->add_flag("--bytes", bytes, "One id per byte (a vocabulary of 256)");
  tokenize->add_option("IN", options.inputs, "Text files, or directories whose files are read recursively")
      ->required();
  tokenize->add_option("--include", options.include,
                       "Read only a directory's files whose name matches this pattern, e.g. '*.py'");
  tokenize->add_option("--out", options.out_dir, "The directory to write (created if missing)")->required();
  tokenize->add_option("--val-percent", options.val_percent,
                       "The share of the tokens, from the end, that becomes val.bin (default 10)");
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  if (chars == bytes) {
    std::fprintf(stderr, "hetps-data tokenize: choose one of --chars and --bytes\n");
    return 2;
  }
  options.kind = chars ? "chars" : "bytes";
  auto report = hetps::Tokenize(options);
  if (!report.ok()) return hetps::FatalError("hetps-data tokenize", report.status());
  const hetps::Vocabulary& vocabulary = report->vocabulary;
  std::printf(
      "hetps-data tokenize: %llu files (%llu bytes) -> %s: %llu training and %llu validation tokens, "
      "vocabulary %u (%s, %s ids)\n",
      static_cast<unsigned long long>(report->files), static_cast<unsigned long long>(report->input_bytes),
      options.out_dir.c_str(), static_cast<unsigned long long>(vocabulary.train_tokens),
      static_cast<unsigned long long>(vocabulary.val_tokens), vocabulary.size, vocabulary.kind.c_str(),
      hetps::TokenDTypeName(*vocabulary.dtype));
  if (report->invalid_utf8 > 0) {
    std::printf("hetps-data tokenize: %llu byte sequences were not UTF-8 and became U+FFFD\n",
                static_cast<unsigned long long>(report->invalid_utf8));
  }
  return 0;
}
