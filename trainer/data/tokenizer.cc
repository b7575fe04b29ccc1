#include "trainer/data/tokenizer.h"

#include <fnmatch.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

namespace hetps {
namespace {

constexpr uint32_t kReplacement = 0xfffd;
constexpr uint32_t kCodePoints = 0x110000;
constexpr size_t kBufferBytes = 1 << 20;

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// UTF-8 in pieces of any size, as code points; what is not UTF-8 (a stray continuation byte, a
// sequence cut short, an overlong form, a surrogate) becomes one U+FFFD per bad sequence.
class Utf8Decoder {
 public:
  template <typename Emit>
  void Feed(const uint8_t* bytes, size_t count, Emit&& emit) {
    for (size_t i = 0; i < count; ++i) {
      const uint8_t byte = bytes[i];
      if (need_ > 0) {
        if ((byte & 0xc0) == 0x80) {
          code_ = (code_ << 6) | (byte & 0x3f);
          if (--need_ == 0) {
            const bool valid = code_ >= min_ && code_ < kCodePoints && (code_ < 0xd800 || code_ > 0xdfff);
            Emit1(valid ? code_ : kReplacement, !valid, emit);
          }
          continue;
        }
        need_ = 0;
        Emit1(kReplacement, true, emit);  // cut short; `byte` starts afresh
      }
      if (byte < 0x80) {
        emit(byte);
      } else if (byte >= 0xc2 && byte <= 0xdf) {
        Start(byte & 0x1f, 1, 0x80);
      } else if (byte >= 0xe0 && byte <= 0xef) {
        Start(byte & 0x0f, 2, 0x800);
      } else if (byte >= 0xf0 && byte <= 0xf4) {
        Start(byte & 0x07, 3, 0x10000);
      } else {
        Emit1(kReplacement, true, emit);
      }
    }
  }

  // The end of the input: a sequence left open is one U+FFFD.
  template <typename Emit>
  void Finish(Emit&& emit) {
    if (need_ > 0) Emit1(kReplacement, true, emit);
    need_ = 0;
  }

  uint64_t invalid() const { return invalid_; }

 private:
  void Start(uint32_t bits, int need, uint32_t min) {
    code_ = bits;
    need_ = need;
    min_ = min;
  }
  template <typename Emit>
  void Emit1(uint32_t code, bool invalid, Emit&& emit) {
    invalid_ += invalid ? 1 : 0;
    emit(code);
  }

  uint32_t code_ = 0;
  int need_ = 0;
  uint32_t min_ = 0;
  uint64_t invalid_ = 0;
};

std::string EncodeUtf8(uint32_t code) {
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xc0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xe0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  }
  return out;
}

// Calls `piece` with each file's bytes in order, a buffer at a time, and `end_of_file` after each.
Status ReadAll(const std::vector<std::string>& files,
               const std::function<void(const uint8_t*, size_t)>& piece,
               const std::function<void()>& end_of_file) {
  std::vector<uint8_t> buffer(kBufferBytes);
  for (const std::string& path : files) {
    File file(std::fopen(path.c_str(), "rb"));
    if (!file) return Status::IoError(path + ": cannot open: " + std::strerror(errno));
    size_t got = 0;
    while ((got = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) piece(buffer.data(), got);
    if (std::ferror(file.get())) return Status::IoError(path + ": cannot read: " + std::strerror(errno));
    end_of_file();
  }
  return Status::Ok();
}

// Calls `token` with each id of the input, in order.
Status ForEachToken(const TokenizeOptions& options, const std::vector<std::string>& files,
                    const std::function<void(uint32_t)>& token, uint64_t* invalid_utf8) {
  if (options.kind == "bytes") {
    return ReadAll(
        files, [&](const uint8_t* bytes, size_t count) { std::for_each(bytes, bytes + count, token); },
        [] {});
  }
  Utf8Decoder decoder;
  // A file's last character ends with the file: one cut short is not joined to the next file's.
  HETPS_RETURN_IF_ERROR(ReadAll(
      files, [&](const uint8_t* bytes, size_t count) { decoder.Feed(bytes, count, token); },
      [&] { decoder.Finish(token); }));
  if (invalid_utf8 != nullptr) *invalid_utf8 = decoder.invalid();
  return Status::Ok();
}

// Token ids to a file, through a buffer.
class IdWriter {
 public:
  IdWriter(std::string path, TokenDType dtype) : path_(std::move(path)), width_(TokenDTypeBytes(dtype)) {}

  Status Open() {
    file_.reset(std::fopen((path_ + ".tmp").c_str(), "wb"));
    if (!file_) return Status::IoError(path_ + ".tmp: cannot create: " + std::strerror(errno));
    buffer_.reserve(kBufferBytes);
    return Status::Ok();
  }
  void Add(uint32_t id) {
    for (size_t b = 0; b < width_; ++b) buffer_.push_back(static_cast<uint8_t>(id >> (8 * b)));
    if (buffer_.size() >= kBufferBytes) Flush();
  }
  // Writes what is left and puts the file in its place.
  Status Close() {
    Flush();
    const bool failed = failed_ || std::fflush(file_.get()) != 0;
    file_.reset();
    if (failed) return Status::IoError(path_ + ".tmp: cannot write: " + std::strerror(errno));
    std::error_code ec;
    std::filesystem::rename(path_ + ".tmp", path_, ec);
    if (ec) return Status::IoError(path_ + ": cannot rename into place: " + ec.message());
    return Status::Ok();
  }

 private:
  void Flush() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_.get()) != buffer_.size()) {
      failed_ = true;
    }
    buffer_.clear();
  }

  std::string path_;
  size_t width_;
  File file_;
  std::vector<uint8_t> buffer_;
  bool failed_ = false;
};

}  // namespace

Result<std::vector<std::string>> TokenizerInputs(const TokenizeOptions& options) {
  std::vector<std::string> files;
  for (const std::string& input : options.inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) {
      std::vector<std::string> found;
      for (auto it = std::filesystem::recursive_directory_iterator(input, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const std::string name = it->path().filename().string();
        if (options.include.empty() || fnmatch(options.include.c_str(), name.c_str(), 0) == 0) {
          found.push_back(it->path().string());
        }
      }
      if (ec) return Status::IoError(input + ": cannot list: " + ec.message());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(input, ec)) {
      files.push_back(input);
    } else {
      return Status::InvalidArgument(input + ": no such file or directory");
    }
  }
  if (files.empty()) {
    return Status::InvalidArgument(
        "no input files" + (options.include.empty() ? std::string() : " matching " + options.include));
  }
  return files;
}

Result<TokenizeReport> Tokenize(const TokenizeOptions& options) {
  if (options.kind != "chars" && options.kind != "bytes") {
    return Status::InvalidArgument("the tokenizer '" + options.kind + "' is not one; choose chars or bytes");
  }
  if (!(options.val_percent > 0 && options.val_percent < 100)) {
    return Status::InvalidArgument("--val-percent " + std::to_string(options.val_percent) +
                                   " must lie between 0 and 100 (both excluded)");
  }
  HETPS_ASSIGN_OR_RETURN(std::vector<std::string> files, TokenizerInputs(options));
  TokenizeReport report;
  report.files = files.size();
  for (const std::string& file : files) {
    std::error_code ec;
    report.input_bytes += std::filesystem::file_size(file, ec);
  }

  // First pass: the vocabulary and the count.
  std::vector<bool> seen(options.kind == "chars" ? kCodePoints : 256, false);
  uint64_t total = 0;
  HETPS_RETURN_IF_ERROR(ForEachToken(
      options, files,
      [&](uint32_t code) {
        seen[code] = true;
        ++total;
      },
      &report.invalid_utf8));
  Vocabulary& vocabulary = report.vocabulary;
  vocabulary.kind = options.kind;
  std::vector<uint32_t> id_of(seen.size(), 0);
  if (options.kind == "bytes") {
    vocabulary.size = 256;
    for (uint32_t b = 0; b < 256; ++b) id_of[b] = b;
  } else {
    for (uint32_t code = 0; code < kCodePoints; ++code) {
      if (!seen[code]) continue;
      id_of[code] = static_cast<uint32_t>(vocabulary.tokens.size());
      vocabulary.tokens.push_back(EncodeUtf8(code));
    }
    vocabulary.size = static_cast<uint32_t>(vocabulary.tokens.size());
  }
  vocabulary.dtype = vocabulary.size <= 65536 ? TokenDType::kUInt16 : TokenDType::kUInt32;
  const auto val =
      static_cast<uint64_t>(std::llround(static_cast<double>(total) * options.val_percent / 100));
  if (val < 2 || total - val < 2) {
    return Status::InvalidArgument("the input holds " + std::to_string(total) + " tokens: too few for " +
                                   std::to_string(options.val_percent) +
                                   "% of them to give at least 2 validation tokens and 2 training tokens");
  }
  vocabulary.train_tokens = total - val;
  vocabulary.val_tokens = val;

  // Second pass: the ids.
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) return Status::IoError(options.out_dir + ": cannot create: " + ec.message());
  const std::filesystem::path dir(options.out_dir);
  IdWriter train((dir / "train.bin").string(), *vocabulary.dtype);
  IdWriter validation((dir / "val.bin").string(), *vocabulary.dtype);
  HETPS_RETURN_IF_ERROR(train.Open());
  HETPS_RETURN_IF_ERROR(validation.Open());
  uint64_t written = 0;
  HETPS_RETURN_IF_ERROR(ForEachToken(
      options, files,
      [&](uint32_t code) {
        (written < vocabulary.train_tokens ? train : validation).Add(id_of[code]);
        ++written;
      },
      nullptr));
  if (written != total) {
    return Status::IoError("the input changed while it was read (" + std::to_string(total) +
                           " tokens, then " + std::to_string(written) + ")");
  }
  HETPS_RETURN_IF_ERROR(train.Close());
  HETPS_RETURN_IF_ERROR(validation.Close());
  HETPS_RETURN_IF_ERROR(WriteVocabulary((dir / "vocab.json").string(), vocabulary));
  return report;
}

}  // namespace hetps
