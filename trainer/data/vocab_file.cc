#include "trainer/data/vocab_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "checkpoint/file_system.h"

namespace hetps {

std::string VocabularyPathBeside(const std::string& data_file) {
  return (std::filesystem::path(data_file).parent_path() / "vocab.json").string();
}

Result<Vocabulary> ReadVocabulary(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read vocabulary file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return Status::InvalidArgument(path + ": not a JSON object (a vocab.json as hetps-data tokenize writes)");
  }
  Vocabulary vocabulary;
  const auto size = json.find("vocab_size");
  if (size == json.end() || !size->is_number_unsigned() || size->get<uint64_t>() == 0 ||
      size->get<uint64_t>() > UINT32_MAX) {
    return Status::InvalidArgument(path + ": needs \"vocab_size\", a positive whole number");
  }
  vocabulary.size = size->get<uint32_t>();
  if (json.contains("kind") && json["kind"].is_string()) vocabulary.kind = json["kind"].get<std::string>();
  if (json.contains("dtype")) {
    if (!json["dtype"].is_string()) return Status::InvalidArgument(path + ": \"dtype\" must be a string");
    HETPS_ASSIGN_OR_RETURN(vocabulary.dtype,
                           ParseTokenDType(json["dtype"].get<std::string>(), path + ": dtype"));
    if (*vocabulary.dtype == TokenDType::kUInt16 && vocabulary.size > 65536) {
      return Status::InvalidArgument(path + ": " + std::to_string(vocabulary.size) +
                                     " ids do not fit in uint16 (at most 65536)");
    }
  }
  if (json.contains("tokens") && json["tokens"].is_array()) {
    for (const auto& token : json["tokens"]) {
      if (!token.is_string()) return Status::InvalidArgument(path + ": \"tokens\" must be a list of strings");
      vocabulary.tokens.push_back(token.get<std::string>());
    }
  }
  if (json.contains("train_tokens") && json["train_tokens"].is_number_unsigned()) {
    vocabulary.train_tokens = json["train_tokens"].get<uint64_t>();
  }
  if (json.contains("val_tokens") && json["val_tokens"].is_number_unsigned()) {
    vocabulary.val_tokens = json["val_tokens"].get<uint64_t>();
  }
  return vocabulary;
}

Status WriteVocabulary(const std::string& path, const Vocabulary& vocabulary) {
  nlohmann::json json;
  json["kind"] = vocabulary.kind;
  json["vocab_size"] = vocabulary.size;
  if (vocabulary.dtype) json["dtype"] = TokenDTypeName(*vocabulary.dtype);
  json["train_tokens"] = vocabulary.train_tokens;
  json["val_tokens"] = vocabulary.val_tokens;
  if (!vocabulary.tokens.empty()) json["tokens"] = vocabulary.tokens;
  return WriteFileAtomically(PosixFileSystem(), path, json.dump(1) + "\n");
}

}  // namespace hetps
