// hetps-export: writes the model of a checkpoint as one safetensors file (every tensor under its
// PyTorch name, float32), for Python: safetensors.torch.load_file + module.load_state_dict.
#include <cstdio>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/model_export.h"
#include "common/cli.h"

int main(int argc, char** argv) {
  std::string checkpoint, out;
  CLI::App app(
      "hetps export: writes the model held by a checkpoint as one safetensors file. CHECKPOINT is "
      "a checkpoint's directory (checkpoint-NNNNNN) or a directory of checkpoints, whose newest "
      "committed one is taken.",
      "hetps-export");
  app.add_option("CHECKPOINT", checkpoint, "Checkpoint directory, or a directory of checkpoints")->required();
  app.add_option("OUT", out, "The safetensors file to write, e.g. model.safetensors")->required();
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;

  auto loaded = hetps::LoadCheckpoint(hetps::PosixFileSystem(), checkpoint);
  if (!loaded.ok()) return hetps::FatalError("hetps-export", loaded.status());
  auto written = hetps::ExportCheckpoint(hetps::PosixFileSystem(), *loaded, out);
  if (!written.ok()) return hetps::FatalError("hetps-export", written.status());
  std::printf("hetps-export: wrote %s (%zu tensors, %llu bytes) from %s\n", out.c_str(),
              loaded->manifest.tensors.size(), static_cast<unsigned long long>(written->bytes),
              loaded->path.c_str());
  return 0;
}
