// Fuzz target: a safetensors file's bytes through the reader that loads checkpoints and exported
// models (SafetensorsFile::Parse). Every tensor of an accepted file is read whole, so a byte
// range the checks let through beyond the file shows up under AddressSanitizer.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "checkpoint/safetensors_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = hetps::SafetensorsFile::Parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!file.ok()) return 0;
  unsigned checksum = 0;
  for (const auto& tensor : file->tensors()) {
    const char* bytes = file->data(tensor);
    for (uint64_t i = 0; i < tensor.bytes; ++i) checksum += static_cast<unsigned char>(bytes[i]);
    if (file->Find(tensor.name) != &tensor) std::abort();  // names are unique and indexed
  }
  // Keeps the reads above from being optimised away.
  volatile unsigned sink = checksum;
  (void)sink;
  return 0;
}
