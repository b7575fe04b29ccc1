// The checkpoint directory: commits, pruning, loading with verification, and crashes at every
// step of a checkpoint's write (through a fault-injecting file system) that must leave the
// previous checkpoint loadable. Damaged files and manifests are refused, naming the file.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/checksum.h"
#include "checkpoint/partition_names.h"
#include "tests/checkpoint/fault_injection_file_system.h"
#include "tests/checkpoint/small_checkpoint.h"
#include "tests/support/temp_dir.h"

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Result<Manifest> Write(FileSystem& fs, const std::string& dir, uint64_t id, testing::SmallCheckpoint& f,
                       float fill, uint32_t keep = 3) {
  CheckpointStore store(fs, dir);
  Manifest m = f.MakeManifest();
  m.id = id;
  return WriteCheckpoint(store, m, f.States(fill), keep);
}

CATCH_TEST_CASE("A committed checkpoint loads back whole and verified", "[checkpoint][store]") {
  testing::TempDir dir("store");
  testing::SmallCheckpoint f;
  CheckpointStore store(PosixFileSystem(), dir.path());
  CATCH_CHECK(*store.NextId() == 1);
  auto written = Write(PosixFileSystem(), dir.path(), 1, f, 10.0f);
  CATCH_REQUIRE(written.ok());
  CATCH_CHECK(*store.NextId() == 2);
  CATCH_REQUIRE(written->files.size() == 2);

  auto loaded = LoadCheckpoint(PosixFileSystem(), dir.path());
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->path == store.PathOf(1));
  const Manifest& m = loaded->manifest;
  CATCH_CHECK(m.id == 1);
  CATCH_CHECK(m.round == 7);
  CATCH_CHECK(m.data.epoch == 1);
  CATCH_CHECK(m.data.completed.size() == 2);
  CATCH_CHECK(m.data.completed[0].chunks == std::vector<uint32_t>{0, 1, 2});
  CATCH_CHECK(m.data.partial.size() == 1);
  CATCH_CHECK(m.data.partial[0].next == 1100);
  CATCH_CHECK(m.job_yaml == "model: test\n");
  CATCH_CHECK(CheckSameJob(m, f.map.tensors(), f.map.partitions()).ok());
  for (const PartitionInfo& p : f.map.partitions()) CATCH_CHECK(f.WeightOf(*loaded, p.id) == 10.0f + p.id);
  // The checkpoint's own directory loads the same.
  CATCH_CHECK(LoadCheckpoint(PosixFileSystem(), store.PathOf(1)).ok());
}

CATCH_TEST_CASE("Only the newest `keep` checkpoints are kept, and leftovers of crashes go",
                "[checkpoint][store]") {
  testing::TempDir dir("store-prune");
  testing::SmallCheckpoint f;
  CheckpointStore store(PosixFileSystem(), dir.path());
  CATCH_REQUIRE(store.Prepare(2).ok());  // an uncommitted leftover
  for (uint64_t id : {3, 4, 5, 6})
    CATCH_REQUIRE(Write(PosixFileSystem(), dir.path(), id, f, 1.0f * id, 2).ok());
  CATCH_CHECK(*store.Committed() == std::vector<uint64_t>{5, 6});
  CATCH_CHECK(*PosixFileSystem().ListDir(dir.path()) ==
              std::vector<std::string>{"checkpoint-000005", "checkpoint-000006"});
  auto loaded = LoadCheckpoint(PosixFileSystem(), dir.path());
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->manifest.id == 6);
  CATCH_CHECK(f.WeightOf(*loaded, 0) == 6.0f);
}

CATCH_TEST_CASE("No committed checkpoint is NotFound, naming the directory", "[checkpoint][store]") {
  testing::TempDir dir("store-empty");
  CATCH_REQUIRE(CheckpointStore(PosixFileSystem(), dir.path()).Prepare(1).ok());
  auto loaded = LoadCheckpoint(PosixFileSystem(), dir.path());
  CATCH_CHECK(loaded.status().code() == Status::Code::kNotFound);
  CATCH_CHECK(Contains(loaded.status().message(), dir.path()));
  CATCH_CHECK(LoadCheckpoint(PosixFileSystem(), dir / "nowhere").status().code() == Status::Code::kNotFound);
}

// Writes checkpoint 1, then checkpoint 2 with a crash at operation `crash_at`, then, with
// `power_loss`, drops what was not durable. Returns the id that loads afterwards.
uint64_t CrashDuringSecondCheckpoint(int64_t crash_at, bool power_loss, int64_t* operations = nullptr) {
  testing::TempDir dir("store-crash");
  testing::SmallCheckpoint f;
  testing::FaultInjectionFileSystem fs(PosixFileSystem());
  CATCH_REQUIRE(Write(fs, dir.path(), 1, f, 100.0f).ok());
  CATCH_REQUIRE(fs.DropUnsyncedChanges().ok());  // checkpoint 1 is durable
  fs.ResetCount();
  fs.CrashAtOperation(crash_at);
  const bool written = Write(fs, dir.path(), 2, f, 200.0f, /*keep=*/1).ok();
  if (operations != nullptr) *operations = fs.operations();
  if (crash_at >= 0) CATCH_CHECK_FALSE(written);
  if (power_loss) CATCH_REQUIRE(fs.DropUnsyncedChanges().ok());
  fs.CrashAtOperation(-1);
  auto loaded = LoadCheckpoint(fs, dir.path());
  CATCH_INFO(loaded.status().ToString());
  CATCH_REQUIRE(loaded.ok());
  const uint64_t id = loaded->manifest.id;
  CATCH_REQUIRE((id == 1 || id == 2));
  const float expected = id == 1 ? 100.0f : 200.0f;
  for (const PartitionInfo& p : f.map.partitions()) CATCH_CHECK(f.WeightOf(*loaded, p.id) == expected + p.id);
  // And the next checkpoint is written and wins, whatever the crash left.
  CATCH_REQUIRE(Write(fs, dir.path(), *CheckpointStore(fs, dir.path()).NextId(), f, 300.0f).ok());
  CATCH_CHECK(f.WeightOf(*LoadCheckpoint(fs, dir.path()), 0) == 300.0f);
  return id;
}

CATCH_TEST_CASE("A crash at any step of a checkpoint's write leaves the previous one loadable",
                "[checkpoint][store][crash]") {
  int64_t operations = 0;
  CATCH_CHECK(CrashDuringSecondCheckpoint(-1, true, &operations) == 2);  // no crash: counts the steps
  CATCH_REQUIRE(operations > 10);
  int committed_process_crash = 0, committed_power_loss = 0;
  for (int64_t step = 0; step < operations; ++step) {
    CATCH_INFO("crash at step " << step << " of " << operations);
    committed_process_crash += CrashDuringSecondCheckpoint(step, false) == 2;
    committed_power_loss += CrashDuringSecondCheckpoint(step, true) == 2;
  }
  // The commit is the manifest's rename: only crashes after it (pruning) keep checkpoint 2, and
  // with power lost, only once the directory holding the rename was synced too.
  CATCH_CHECK(committed_process_crash > 0);
  CATCH_CHECK(committed_power_loss < committed_process_crash);
}

CATCH_TEST_CASE("Damaged checkpoints are refused, naming the file and what is wrong", "[checkpoint][store]") {
  testing::TempDir dir("store-damaged");
  testing::SmallCheckpoint f;
  CheckpointStore store(PosixFileSystem(), dir.path());
  CATCH_REQUIRE(Write(PosixFileSystem(), dir.path(), 1, f, 1.0f).ok());
  const std::string ckpt = store.PathOf(1);
  const std::string server1 = ckpt + "/server-1.safetensors";
  const std::string manifest = ckpt + "/manifest.json";
  const std::string good_file = *PosixFileSystem().ReadFile(server1);
  const std::string good_manifest = *PosixFileSystem().ReadFile(manifest);
  auto put = [](const std::string& path, const std::string& content) {
    auto file = PosixFileSystem().NewWritableFile(path);
    CATCH_REQUIRE(file.ok());
    CATCH_REQUIRE((*file)->Append(content.data(), content.size()).ok());
    CATCH_REQUIRE((*file)->Close().ok());
  };
  auto error = [&] {
    auto loaded = LoadCheckpoint(PosixFileSystem(), dir.path());
    CATCH_REQUIRE_FALSE(loaded.ok());
    return loaded.status().message();
  };

  std::string flipped = good_file;
  flipped[flipped.size() - 3] ^= 0x40;
  put(server1, flipped);
  std::string message = error();
  CATCH_CHECK(Contains(message, server1));
  CATCH_CHECK(Contains(message, "checksum"));

  put(server1, good_file.substr(0, good_file.size() - 5));
  message = error();
  CATCH_CHECK(Contains(message, server1));
  CATCH_CHECK(Contains(message, "truncated"));

  CATCH_REQUIRE(PosixFileSystem().RemoveFile(server1).ok());
  message = error();
  CATCH_CHECK(Contains(message, manifest));
  CATCH_CHECK(Contains(message, "server-1.safetensors"));
  put(server1, good_file);
  CATCH_CHECK(LoadCheckpoint(PosixFileSystem(), dir.path()).ok());

  put(manifest, good_manifest.substr(0, good_manifest.size() / 2));
  message = error();
  CATCH_CHECK(Contains(message, manifest));
  CATCH_CHECK(Contains(message, "not valid JSON"));

  // A server file that lies about its offsets, with a manifest whose checksum vouches for it.
  std::string lying = good_file;
  const size_t at = lying.find("\"data_offsets\":[0,");
  CATCH_REQUIRE(at != std::string::npos);
  lying[at + std::strlen("\"data_offsets\":[")] = '4';
  put(server1, lying);
  Manifest m = *Manifest::Parse(good_manifest, "m");
  m.files[1].crc32 = Crc32(lying.data(), lying.size());
  put(manifest, m.ToJson());
  message = error();
  CATCH_CHECK(Contains(message, server1));
  CATCH_CHECK(Contains(message, "data_offsets"));

  // Server 0's file under server 1's name, with matching size and checksum.
  const std::string server0 = *PosixFileSystem().ReadFile(ckpt + "/server-0.safetensors");
  put(server1, server0);
  m.files[1].bytes = server0.size();
  m.files[1].crc32 = Crc32(server0.data(), server0.size());
  put(manifest, m.ToJson());
  message = error();
  CATCH_CHECK(Contains(message, server1));
  CATCH_CHECK(Contains(message, "not server 1's"));
}

CATCH_TEST_CASE("The newest intact checkpoint of a store is taken, and the damaged newer ones are named",
                "[checkpoint][store]") {
  testing::TempDir dir("store-fallback");
  testing::SmallCheckpoint f;
  CheckpointStore store(PosixFileSystem(), dir.path());
  for (uint64_t id : {1, 2, 3}) CATCH_REQUIRE(Write(PosixFileSystem(), dir.path(), id, f, 10.0f * id).ok());
  auto put = [](const std::string& path, const std::string& content) {
    CATCH_REQUIRE(WriteFileAtomically(PosixFileSystem(), path, content).ok());
  };
  // Checkpoint 3: one flipped bit in a server file; checkpoint 2: in its manifest's job text.
  const std::string server0 = store.PathOf(3) + "/server-0.safetensors";
  std::string file = *PosixFileSystem().ReadFile(server0);
  file[file.size() - 2] ^= 0x01;
  put(server0, file);
  const std::string manifest2 = store.PathOf(2) + "/manifest.json";
  std::string text = *PosixFileSystem().ReadFile(manifest2);
  const size_t at = text.find("model: test");
  CATCH_REQUIRE(at != std::string::npos);
  text[at] ^= 0x20;  // "Model: test": still well-formed
  put(manifest2, text);

  auto loaded = LoadCheckpoint(PosixFileSystem(), dir.path());
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->manifest.id == 1);
  CATCH_CHECK(f.WeightOf(*loaded, 0) == 10.0f);
  CATCH_REQUIRE(loaded->skipped.size() == 2);
  CATCH_CHECK(Contains(loaded->skipped[0], server0));
  CATCH_CHECK(Contains(loaded->skipped[0], "checksum"));
  CATCH_CHECK(Contains(loaded->skipped[1], manifest2));
  CATCH_CHECK(Contains(loaded->skipped[1], "differs from the"));
  // The manifest alone comes from the same checkpoint.
  std::string chosen;
  auto manifest = LoadManifest(PosixFileSystem(), dir.path(), &chosen);
  CATCH_REQUIRE(manifest.ok());
  CATCH_CHECK(manifest->id == 1);
  CATCH_CHECK(chosen == store.PathOf(1));
  // A checkpoint named by its own directory is that one or nothing.
  auto named = LoadCheckpoint(PosixFileSystem(), store.PathOf(3));
  CATCH_CHECK(named.status().code() == Status::Code::kInvalidArgument);
  // Every one damaged: refused, naming each.
  CATCH_REQUIRE(PosixFileSystem().RemoveFile(store.PathOf(1) + "/server-1.safetensors").ok());
  auto none = LoadCheckpoint(PosixFileSystem(), dir.path());
  CATCH_REQUIRE_FALSE(none.ok());
  CATCH_CHECK(Contains(none.status().message(), "no intact checkpoint in " + dir.path() + " (3 committed"));
  CATCH_CHECK(Contains(none.status().message(), "server-1.safetensors"));
  CATCH_CHECK(Contains(none.status().message(), manifest2));
}

CATCH_TEST_CASE("A manifest's checksum covers every field and the job's text, not its layout",
                "[checkpoint][manifest]") {
  testing::SmallCheckpoint f;
  Manifest m = f.MakeManifest();
  m.id = 4;
  m.files = {{0, "server-0.safetensors", 10, 0xabcdef01, 7, 7}, {1, "server-1.safetensors", 12, 2, 7, 7}};
  m.job_yaml = "model: mlp\noptimizer: {name: sgd, lr: 0.05}\n";
  const std::string good = m.ToJson();
  CATCH_CHECK(Contains(good, "\"manifest_crc32\": \"crc32:"));
  CATCH_REQUIRE(Manifest::Parse(good, "m.json").ok());
  auto changed = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    CATCH_REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    return Manifest::Parse(text, "m.json").status();
  };
  // lr 0.05 became 8.05: a flipped bit a resumed job would have trained with.
  const Status lr = changed("lr: 0.05", "lr: 8.05");
  CATCH_CHECK(lr.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(lr.message(), "m.json: its content's checksum"));
  CATCH_CHECK(Contains(lr.message(), "(corrupt)"));
  CATCH_CHECK_FALSE(changed("\"round\": 7", "\"round\": 6").ok());
  CATCH_CHECK(Contains(changed("\"manifest_crc32\"", "\"crc\"").message(), "manifest_crc32: missing"));
  // Whitespace is not content.
  CATCH_CHECK(changed("\n \"id\": 4", "\n\n    \"id\":   4").ok());
  // A manifest of format 1, which had no checksum, is still read.
  std::string old_format = good;
  old_format.replace(old_format.find("\"format_version\": 2"), 19, "\"format_version\": 1");
  old_format.erase(old_format.find(",\n \"manifest_crc32\""), std::string::npos);
  old_format += "\n}\n";
  auto read = Manifest::Parse(old_format, "old.json");
  CATCH_INFO(read.status().ToString());
  CATCH_CHECK(read.ok());
}

CATCH_TEST_CASE("A manifest with missing or mistyped fields is refused, naming the field",
                "[checkpoint][manifest]") {
  testing::SmallCheckpoint f;
  Manifest m = f.MakeManifest();
  m.id = 3;
  m.files = {{0, "server-0.safetensors", 10, 0xabcdef01, 7, 7}, {1, "server-1.safetensors", 12, 2, 7, 7}};
  const std::string good = m.ToJson();
  auto parsed = Manifest::Parse(good, "m.json");
  CATCH_REQUIRE(parsed.ok());
  CATCH_CHECK(parsed->files[0].crc32 == 0xabcdef01);
  CATCH_CHECK(parsed->ToJson() == good);

  auto error = [](std::string text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    CATCH_REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    auto bad = Manifest::Parse(text, "m.json");
    CATCH_REQUIRE_FALSE(bad.ok());
    CATCH_CHECK(Contains(bad.status().message(), "m.json: "));
    return bad.status().message();
  };
  CATCH_CHECK(Contains(error(good, "\"round\"", "\"rounds\""), "round: missing"));
  CATCH_CHECK(Contains(error(good, "\"id\": 3", "\"id\": -3"), "id: -3 is not a non-negative integer"));
  CATCH_CHECK(Contains(error(good, "crc32:abcdef01", "crc32:xyz"), "files[0].crc32"));
  CATCH_CHECK(Contains(error(good, "\"server-0.safetensors\"", "\"../x\""), "files[0].file"));
  CATCH_CHECK(Contains(error(good, "\"hetps-checkpoint\"", "\"other\""), "format"));
  CATCH_CHECK(Contains(error(good, "\"format_version\": 2", "\"format_version\": 9"), "not supported"));
  CATCH_CHECK(Contains(error(good, "\"servers\": 2", "\"servers\": 3"), "lists 2 files for 3 servers"));
}

CATCH_TEST_CASE("A checkpoint of another model or shard map is told apart", "[checkpoint][manifest]") {
  testing::SmallCheckpoint f;
  const Manifest m = f.MakeManifest();
  auto other_model = ShardMap::Build({{"w", {11}, wire::DType::F32}, {"b", {3}, wire::DType::F32}}, 2, 24);
  Status different = CheckSameJob(m, other_model->tensors(), other_model->partitions());
  CATCH_CHECK(different.code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(Contains(different.message(), "another model"));
  CATCH_CHECK(Contains(different.message(), "w [11]"));
  auto other_map = ShardMap::Build(f.map.tensors(), 1, 24);
  CATCH_CHECK(
      Contains(CheckSameJob(m, other_map->tensors(), other_map->partitions()).message(), "shard map"));
}

}  // namespace
}  // namespace hetps
