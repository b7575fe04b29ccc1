// Model export: the whole model from a checkpoint's partitions, each tensor under its own name in
// its model shape, and the writer thread that also writes it.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/model_export.h"
#include "tests/checkpoint/small_checkpoint.h"
#include "tests/support/temp_dir.h"

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<float> Floats(const SafetensorsFile& file, const std::string& name) {
  const auto* t = file.Find(name);
  CATCH_REQUIRE(t != nullptr);
  CATCH_CHECK(t->dtype == "F32");
  std::vector<float> values(t->elements);
  std::memcpy(values.data(), file.data(*t), t->bytes);
  return values;
}

CATCH_TEST_CASE("A checkpoint exports as the whole model under the model's names", "[checkpoint][export]") {
  testing::TempDir dir("export");
  testing::SmallCheckpoint f;
  CheckpointWriter writer(PosixFileSystem(), dir / "ckpt", {});
  Manifest manifest = f.MakeManifest();
  writer.Write(manifest, f.States(1.0f));
  writer.Flush();  // the next States() call replaces the buffers
  writer.WriteModel(dir / "direct.safetensors", f.map.tensors(), f.map.partitions(), f.States(1.0f),
                    {{"k", "v"}});
  writer.Flush();
  auto finished = writer.TakeFinished();
  CATCH_REQUIRE(finished.size() == 2);
  CATCH_CHECK(finished[0].status.ok());
  CATCH_CHECK(finished[0].id == 1);
  CATCH_CHECK(finished[0].bytes > 0);
  CATCH_CHECK(finished[1].status.ok());

  auto loaded = LoadCheckpoint(PosixFileSystem(), dir / "ckpt");
  CATCH_REQUIRE(loaded.ok());
  CATCH_REQUIRE(ExportCheckpoint(PosixFileSystem(), *loaded, dir / "model.safetensors").ok());
  for (const std::string name : {"model.safetensors", "direct.safetensors"}) {
    CATCH_INFO(name);
    auto model = SafetensorsFile::Read(PosixFileSystem(), dir / name);
    CATCH_REQUIRE(model.ok());
    CATCH_CHECK(model->metadata().at("format") == "pt");
    CATCH_REQUIRE(model->tensors().size() == 2);
    CATCH_CHECK(model->Find("w")->shape == std::vector<int64_t>{10});
    CATCH_CHECK(model->Find("b")->shape == std::vector<int64_t>{3});
    // Each element carries its partition's fill value: 1 + partition id.
    std::vector<float> expected_w(10), expected_b(3);
    for (const PartitionInfo& p : f.map.partitions()) {
      std::vector<float>& target = p.tensor == 0 ? expected_w : expected_b;
      for (uint64_t i = 0; i < p.length; ++i) target[p.offset + i] = 1.0f + p.id;
    }
    CATCH_CHECK(Floats(*model, "w") == expected_w);
    CATCH_CHECK(Floats(*model, "b") == expected_b);
  }
  CATCH_CHECK_FALSE(PosixFileSystem().Exists(dir / "model.safetensors.tmp"));
}

CATCH_TEST_CASE("An export missing a partition names it and writes nothing", "[checkpoint][export]") {
  testing::TempDir dir("export-missing");
  testing::SmallCheckpoint f;
  std::vector<ServerState> states = f.States(0.0f);
  states[1].tensors.pop_back();
  CheckpointWriter writer(PosixFileSystem(), dir / "ckpt", {});
  writer.WriteModel(dir / "model.safetensors", f.map.tensors(), f.map.partitions(), states, {});
  writer.Flush();
  auto finished = writer.TakeFinished();
  CATCH_REQUIRE(finished.size() == 1);
  CATCH_CHECK_FALSE(finished[0].status.ok());
  CATCH_CHECK(Contains(finished[0].status.message(), "no server sent the weights of"));
  CATCH_CHECK_FALSE(PosixFileSystem().Exists(dir / "model.safetensors"));
}

}  // namespace
}  // namespace hetps
