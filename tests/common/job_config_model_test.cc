// The job file's model: a built-in name, or a TorchScript file with its loss.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/job_config.h"

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Status Rejection(const std::string& yaml) {
  Result<JobOptions> options = ParseJobYaml(yaml, "job.yaml");
  CATCH_INFO("yaml:\n" << yaml);
  CATCH_REQUIRE_FALSE(options.ok());
  CATCH_CHECK(options.status().code() == Status::Code::kInvalidArgument);
  return options.status();
}

CATCH_TEST_CASE("A model map names a TorchScript file and its loss", "[common][job_config]") {
  Result<JobOptions> o = ParseJobYaml("model:\n  torchscript: /models/net.pt\n  loss: mse\n", "job.yaml");
  CATCH_REQUIRE(o.ok());
  CATCH_CHECK(o->model == "torchscript");
  CATCH_CHECK(o->model_file == "/models/net.pt");
  CATCH_CHECK(o->loss == Loss::kMse);
  Result<JobOptions> plain = ParseJobYaml("model: {torchscript: net.pt}\n", "job.yaml");
  CATCH_REQUIRE(plain.ok());
  CATCH_CHECK(plain->loss == Loss::kCrossEntropy);
  Result<JobOptions> builtin = ParseJobYaml("model: mlp\n", "job.yaml");
  CATCH_REQUIRE(builtin.ok());
  CATCH_CHECK(builtin->model == "mlp");
  CATCH_CHECK(builtin->model_file.empty());
}

CATCH_TEST_CASE("The resolved job writes a model map back as a map", "[common][job_config]") {
  Result<JobOptions> o = ParseJobYaml("model: {torchscript: /models/net.pt, loss: nll}\n", "job.yaml");
  CATCH_REQUIRE(o.ok());
  Result<JobOptions> again = ParseJobYaml(JobOptionsToYaml(*o), "resolved.yaml");
  CATCH_REQUIRE(again.ok());
  CATCH_CHECK(again->model_file == "/models/net.pt");
  CATCH_CHECK(again->loss == Loss::kNll);
  Result<JobOptions> builtin = ParseJobYaml(JobOptionsToYaml(JobOptions{}), "resolved.yaml");
  CATCH_REQUIRE(builtin.ok());
  CATCH_CHECK(builtin->model == "cnn");
}

CATCH_TEST_CASE("A bad model map names the key and what is allowed", "[common][job_config]") {
  Status missing = Rejection("model:\n  loss: mse\n");
  CATCH_CHECK(Contains(missing.message(), "job.yaml:2: model.torchscript: required"));
  Status unknown = Rejection("model:\n  torchscript: a.pt\n  file: b.pt\n");
  CATCH_CHECK(
      Contains(unknown.message(), "job.yaml:3: model.file: unknown key; known keys: torchscript, loss"));
  Status loss = Rejection("model:\n  torchscript: a.pt\n  loss: hinge\n");
  CATCH_CHECK(
      Contains(loss.message(), "model.loss: 'hinge' is not allowed; choose one of: cross_entropy, mse, nll"));
  Status name = Rejection("model: resnet\n");
  CATCH_CHECK(Contains(name.message(), "model: 'resnet' is not allowed"));
}

CATCH_TEST_CASE("A loss other than cross_entropy needs a TorchScript model", "[common][job_config]") {
  JobOptions o;
  o.loss = Loss::kMse;
  Status status = ValidateJobOptions(o);
  CATCH_CHECK(Contains(status.message(), "loss: mse needs a TorchScript model"));
  o.model = "torchscript";
  o.model_file = "net.pt";
  CATCH_CHECK(ValidateJobOptions(o).ok());
  o.model = "cnn";
  CATCH_CHECK(Contains(ValidateJobOptions(o).message(), "give one or the other"));
}

CATCH_TEST_CASE("A relative TorchScript path is taken from the job file's directory",
                "[common][job_config]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hetps_job_model_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "job.yaml");
    out << "model: {torchscript: nets/net.pt}\n";
  }
  Result<JobOptions> loaded = LoadJobFile((dir / "job.yaml").string());
  {
    std::ofstream out(dir / "job.yaml");
    out << "model: {torchscript: /abs/net.pt}\n";
  }
  Result<JobOptions> absolute = LoadJobFile((dir / "job.yaml").string());
  std::filesystem::remove_all(dir);
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->model_file == (dir / "nets/net.pt").string());
  CATCH_REQUIRE(absolute.ok());
  CATCH_CHECK(absolute->model_file == "/abs/net.pt");
}

CATCH_TEST_CASE("model: gpt takes model_options and token data, and the resolved job keeps both",
                "[common][job_config]") {
  const std::string job =
      "model: gpt\nmodel_options: {layers: 2, heads: 8, width: 64, context: 512}\n"
      "data: {format: tokens, train: train.bin, test: val.bin, dtype: uint32, context: 256, vocab: 70000}\n";
  Result<JobOptions> o = ParseJobYaml(job, "job.yaml");
  CATCH_REQUIRE(o.ok());
  CATCH_CHECK(o->model == "gpt");
  CATCH_CHECK(o->model_options.layers == 2);
  CATCH_CHECK(o->model_options.heads == 8);
  CATCH_CHECK(o->model_options.width == 64);
  CATCH_CHECK(o->model_options.context == 512);
  CATCH_CHECK(o->data.format == "tokens");
  CATCH_CHECK(o->data.train.x == "train.bin");
  CATCH_CHECK(o->data.token_dtype == "uint32");
  CATCH_CHECK(o->data.context == 256);
  CATCH_CHECK(o->data.vocab == 70000);
  Result<JobOptions> again = ParseJobYaml(JobOptionsToYaml(*o), "resolved.yaml");
  CATCH_REQUIRE(again.ok());
  CATCH_CHECK(again->model_options.heads == 8);
  CATCH_CHECK(again->model_options.context == 512);
  CATCH_CHECK(again->data.token_dtype == "uint32");
  CATCH_CHECK(again->data.context == 256);
  CATCH_CHECK(again->data.vocab == 70000);
  Result<JobOptions> defaults =
      ParseJobYaml("model: gpt\ndata: {format: tokens, train: a, test: b, context: 8}\n", "job.yaml");
  CATCH_REQUIRE(defaults.ok());
  CATCH_CHECK(defaults->model_options.layers == 4);
  CATCH_CHECK(defaults->model_options.width == 128);
  CATCH_CHECK(defaults->model_options.context == 0);
}

CATCH_TEST_CASE("Token data and model gpt refuse what does not go with them", "[common][job_config]") {
  const std::string tokens = "data: {format: tokens, train: a.bin, test: b.bin, context: 64}\n";
  CATCH_CHECK(Contains(Rejection("model: gpt\n").message(), "model: gpt needs token data"));
  CATCH_CHECK(Contains(Rejection("model: mlp\n" + tokens).message(), "model: mlp takes images"));
  CATCH_CHECK(Contains(Rejection("model: {torchscript: lm.pt, loss: mse}\n" + tokens).message(),
                       "loss: mse does not take token data"));
  CATCH_CHECK(Contains(Rejection("model: gpt\nmodel_options: {context: 32}\n" + tokens).message(),
                       "model_options.context: 32 positions are fewer than data.context (64"));
  const Status heads = Rejection("model: gpt\nmodel_options: {heads: 3, width: 64}\n" + tokens);
  CATCH_CHECK(Contains(heads.message(), "job.yaml:2: model_options"));
  CATCH_CHECK(Contains(heads.message(), "3 heads do not divide width 64"));
  CATCH_CHECK(Contains(Rejection("model: gpt\nmodel_options: {depth: 3}\n" + tokens).message(), "depth"));
  CATCH_CHECK(Contains(Rejection("model: gpt\ndata: {format: tokens, train: a, test: b}\n").message(),
                       "data.context: required with format tokens"));
  CATCH_CHECK(Contains(
      Rejection("model: gpt\ndata: {format: tokens, train: a, test: b, context: 8, serve: true}\n").message(),
      "data.serve: format tokens is not served"));
  CATCH_CHECK(Contains(
      Rejection("model: gpt\ndata: {format: tokens, train: a, test: b, context: 8, dtype: int8}\n").message(),
      "data.dtype"));
  CATCH_CHECK(ParseJobYaml("model: {torchscript: lm.pt, loss: nll}\n" + tokens, "job.yaml").ok());
}

CATCH_TEST_CASE("Losses convert to and from names and the wire", "[common][job_config]") {
  for (Loss loss : {Loss::kCrossEntropy, Loss::kMse, Loss::kNll}) {
    CATCH_CHECK(*ParseLoss(LossName(loss)) == loss);
    CATCH_CHECK(FromWire(ToWire(loss)) == loss);
  }
  CATCH_CHECK(Contains(ParseLoss("l1").status().message(), "allowed: cross_entropy, mse, nll"));
}

}  // namespace
}  // namespace hetps
