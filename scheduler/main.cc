// hetps-scheduler: runs one training job. Reads the job file, waits for the servers and trainers
// it names, drives the job to its end, prints progress and the final accuracy, and writes the run
// summary. Flags override the job file's fields.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <limits>

#include "checkpoint/checkpoint_store.h"
#include "common/allocator.h"
#include "common/cli.h"
#include "common/logging.h"
#include "http/http_server.h"
#include "scheduler/scheduler.h"
#include "trainer/data/token_file.h"

namespace {

const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// SIGINT/SIGTERM: the scheduler takes a checkpoint, then shuts the job down cleanly and writes
// its summary; a second signal shuts it down at once.
std::atomic<bool> g_stop{false};
std::atomic<bool> g_stop_after_checkpoint{false};
void RequestStop(int) {
  if (g_stop_after_checkpoint.exchange(true)) g_stop.store(true);
}

struct Overrides {
  std::string model, model_file, loss, mode, optimizer, listen, summary, balance, async_batch, wire_dtype,
      pseudo_gradient_dtype, checkpoint_dir, model_out, curve_keys, http;
  uint32_t checkpoint_interval = 0, checkpoint_keep = 0;
  uint32_t epochs = 0, global_batch_size = 0, servers = 0, trainers = 0, max_trainers = 0, staleness = 0;
  uint32_t round_steps = 0;
  double round_seconds = 0, outer_lr = 0, outer_momentum = 0;
  bool overlap_rounds = true, async_rounds = false;
  uint64_t partition_bytes = 0, seed = 0, max_train_samples = 0, eval_interval_samples = 0;
  uint64_t max_message_bytes = 0, max_model_bytes = 0;
  bool staleness_aware_lr = false;
  double lr = 0, momentum = 0, weight_decay = 0;
};

// Flags given on the command line replace the job file's values.
hetps::Status ApplyOverrides(const CLI::App& app, const Overrides& o, hetps::JobOptions* job) {
  auto given = [&](const char* flag) { return app.get_option(flag)->count() > 0; };
  if (given("--model")) {
    job->model = o.model;
    job->model_file.clear();
  }
  if (given("--model-file")) {
    job->model = "torchscript";
    job->model_file = o.model_file;
  }
  if (given("--loss")) job->loss = *hetps::ParseLoss(o.loss);
  if (given("--mode")) {
    auto mode = hetps::ParseMode(o.mode);
    if (!mode.ok()) return mode.status();
    job->mode = *mode;
  }
  if (given("--staleness")) job->staleness = o.staleness;
  // A round is measured in steps or in seconds: either flag replaces both of the job file's.
  if (given("--round-steps")) {
    job->diloco.round_steps = o.round_steps;
    job->diloco.round_seconds = 0;
  }
  if (given("--round-seconds")) {
    job->diloco.round_seconds = o.round_seconds;
    job->diloco.round_steps = 0;
  }
  if (given("--overlap-rounds")) job->diloco.overlap = o.overlap_rounds;
  if (given("--async-rounds")) job->diloco.async = o.async_rounds;
  if (given("--pseudo-gradient-dtype"))
    job->diloco.int8_pseudo_gradients = *hetps::ParsePseudoGradientDType(o.pseudo_gradient_dtype);
  if (given("--outer-lr")) job->outer_optimizer.lr = o.outer_lr;
  if (given("--outer-momentum")) {
    job->outer_optimizer.momentum = o.outer_momentum;
    job->outer_optimizer.nesterov = o.outer_momentum > 0;
    job->outer_optimizer.dampening = 0;
  }
  if (given("--staleness-aware-lr")) job->staleness_aware_lr = o.staleness_aware_lr;
  if (given("--balance"))
    job->balance = o.balance == "speed" ? hetps::Balance::kSpeed : hetps::Balance::kNone;
  if (given("--async-batch"))
    job->async_batch = o.async_batch == "whole" ? hetps::AsyncBatch::kWhole : hetps::AsyncBatch::kShare;
  if (given("--wire-dtype")) job->wire_dtype = *hetps::ParseWireDType(o.wire_dtype);
  if (given("--eval-interval-samples")) job->eval_interval_samples = o.eval_interval_samples;
  if (given("--optimizer")) {
    auto kind = hetps::ParseOptimizerKind(o.optimizer);
    if (!kind.ok()) return kind.status();
    if (kind.value() != job->optimizer.kind) job->optimizer = hetps::DefaultOptimizerOptions(*kind);
  }
  if (given("--lr")) job->optimizer.lr = o.lr;
  if (given("--momentum")) job->optimizer.momentum = o.momentum;
  if (given("--weight-decay")) job->optimizer.weight_decay = o.weight_decay;
  if (given("--epochs")) job->epochs = o.epochs;
  if (given("--global-batch-size")) job->global_batch_size = o.global_batch_size;
  if (given("--servers")) job->servers = o.servers;
  if (given("--trainers")) job->trainers = o.trainers;
  if (given("--max-trainers")) job->max_trainers = o.max_trainers;
  if (given("--partition-bytes")) job->partition_bytes = o.partition_bytes;
  if (given("--max-message-bytes")) job->max_message_bytes = o.max_message_bytes;
  if (given("--max-model-bytes")) job->max_model_bytes = o.max_model_bytes;
  if (given("--listen")) job->listen = o.listen;
  if (given("--http")) job->http.listen = o.http == "off" ? "" : o.http;
  if (given("--summary")) job->summary = o.summary;
  if (given("--seed")) job->seed = o.seed;
  if (given("--max-train-samples")) job->max_train_samples = o.max_train_samples;
  if (given("--checkpoint-dir")) job->checkpoint.dir = o.checkpoint_dir;
  if (given("--checkpoint-interval")) job->checkpoint.interval_seconds = o.checkpoint_interval;
  if (given("--checkpoint-keep")) job->checkpoint.keep = o.checkpoint_keep;
  if (given("--model-out")) job->model_out = o.model_out;
  if (given("--curve-keys")) {
    job->security.curve = true;
    job->security.keys_dir = o.curve_keys;
  }
  return hetps::ValidateJobOptions(*job);
}

}  // namespace

int main(int argc, char** argv) {
  hetps::KeepLargeBuffersMapped();  // first, before any thread or large buffer exists
  std::string config_path, log_level, progress = "auto";
  Overrides o;
  CLI::App app(
      "hetps scheduler: runs one training job. Servers and trainers connect to it; it "
      "assigns shards and data, tracks who is alive, shows progress and writes the run "
      "summary. Flags override the fields of the job file (see configs/ and docs/).",
      "hetps-scheduler");
  app.add_option("--config", config_path, "YAML job file; without it every field has its default")
      ->check(CLI::ExistingFile);
  app.add_option("--model", o.model, "Model: mlp | cnn | gpt (gpt: token data)")
      ->check(CLI::IsMember({"mlp", "cnn", "gpt"}));
  app.add_option("--model-file", o.model_file,
                 "Train this TorchScript file (torch.jit.script(model).save(FILE)) instead of a "
                 "built-in model: the job file's model: {torchscript: FILE}")
      ->excludes("--model");
  app.add_option("--loss", o.loss, "Loss of a TorchScript model: cross_entropy | mse | nll")
      ->check(CLI::IsMember({"cross_entropy", "mse", "nll"}));
  app.add_option("--mode", o.mode, "Consistency mode: sync | async | ssp | auto | diloco")
      ->check(CLI::IsMember({"sync", "async", "ssp", "auto", "diloco"}));
  auto* round_steps = app.add_option("--round-steps", o.round_steps,
                                     "diloco: inner steps per round (0: rounds by time; diloco.round_steps)")
                          ->check(CLI::Range(0, 1000000));
  app.add_option("--round-seconds", o.round_seconds,
                 "diloco: seconds per round (0: a length the servers choose; diloco.round_seconds)")
      ->check(CLI::Range(0.0, 86400.0))
      ->excludes(round_steps);
  app.add_option("--overlap-rounds", o.overlap_rounds,
                 "diloco: run each round while the last one's weights travel (true | false; diloco.overlap)");
  app.add_option("--async-rounds", o.async_rounds,
                 "diloco: each trainer's rounds on its own clock, applied as they arrive (true | false; "
                 "diloco.async)");
  app.add_option("--pseudo-gradient-dtype", o.pseudo_gradient_dtype,
                 "diloco: pseudo-gradients in flight as wire_dtype, or as int8 with error feedback "
                 "(wire_dtype | int8; diloco.pseudo_gradient_dtype)")
      ->check(CLI::IsMember({"wire_dtype", "int8"}));
  app.add_option("--outer-lr", o.outer_lr, "diloco: the outer optimizer's learning rate (outer_optimizer.lr)")
      ->check(CLI::PositiveNumber);
  app.add_option("--outer-momentum", o.outer_momentum,
                 "diloco: the outer SGD's Nesterov momentum (0: none; outer_optimizer.momentum)")
      ->check(CLI::Range(0.0, 0.999999));
  app.add_option("--staleness", o.staleness,
                 "ssp: how many clocks a trainer may run ahead of the slowest live one")
      ->check(CLI::Range(0, 10000));
  app.add_option("--staleness-aware-lr", o.staleness_aware_lr,
                 "async, ssp: divide each push's gradient by 1 + its staleness, in pushes of its "
                 "size (true | false; default false, true in mode auto)");
  app.add_option("--balance", o.balance,
                 "sync: split the global batch evenly (none) or by measured trainer speed (speed)")
      ->check(CLI::IsMember({"none", "speed"}));
  app.add_option("--async-batch", o.async_batch,
                 "async, ssp: each trainer's batch is its share of the global batch (share) or all of it "
                 "(whole; default share, whole in mode auto)")
      ->check(CLI::IsMember({"share", "whole"}));
  app.add_option("--wire-dtype", o.wire_dtype,
                 "Gradients and weights in flight: fp32 | bf16 | fp16 (servers keep float32)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_option("--eval-interval-samples", o.eval_interval_samples,
                 "Also evaluate on the test set every N samples trained (0: after each epoch only)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
  app.add_option("--optimizer", o.optimizer,
                 "Optimizer: sgd | adam | adamw | adagrad (a different one than the job file's "
                 "starts from that optimizer's defaults)")
      ->check(CLI::IsMember({"sgd", "adam", "adamw", "adagrad"}));
  app.add_option("--lr", o.lr, "Learning rate")->check(CLI::PositiveNumber);
  app.add_option("--momentum", o.momentum, "SGD momentum")->check(CLI::Range(0.0, 0.999999));
  app.add_option("--weight-decay", o.weight_decay, "Weight decay")->check(CLI::NonNegativeNumber);
  app.add_option("--epochs", o.epochs, "Epochs to train")->check(CLI::Range(1, 1000));
  app.add_option("--global-batch-size", o.global_batch_size, "Samples per step over all trainers")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--servers", o.servers, "Servers to wait for")->check(CLI::Range(1, 256));
  app.add_option("--trainers", o.trainers, "Trainers to wait for at the start")->check(CLI::Range(1, 1024));
  app.add_option("--max-trainers", o.max_trainers,
                 "Trainers that may take part at once, late joiners included (0: --trainers)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--partition-bytes", o.partition_bytes, "Largest partition of a tensor, in bytes")
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 30));
  app.add_option("--max-message-bytes", o.max_message_bytes,
                 "Largest data-plane frame, in bytes (at least --partition-bytes; servers need as much)")
      ->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 30));
  app.add_option("--max-model-bytes", o.max_model_bytes,
                 "Largest model a trainer may register, in bytes of float32 parameters")
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 40));
  hetps::AddEndpointOption(app, "--listen", &o.listen,
                           "Control endpoint, HOST:PORT or tcp://HOST:PORT, e.g. 0.0.0.0:7400 (port *: any)");
  app.add_option("--http", o.http,
                 "Serve the status page, /status (JSON) and /metrics (Prometheus) on ADDR:PORT, e.g. "
                 "127.0.0.1:7480 (port 0: any; off: none); the job file's http.listen");
  std::string http_url_file;
  app.add_option("--http-url-file", http_url_file,
                 "Write the status page's URL (with the port bound) to this file");
  app.add_option("--summary", o.summary, "Write the JSON run summary here (default <run dir>/summary.json)");
  app.add_option("--seed", o.seed, "Seed of model initialisation and data order")
      ->check(CLI::Range(uint64_t{0}, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
  app.add_option("--max-train-samples", o.max_train_samples,
                 "Train on the first N samples of the training set only (0: all)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
  app.add_option("--curve-keys", o.curve_keys,
                 "Use CURVE with the keys in this directory (scheduler.key, and NAME.pub of every "
                 "member to admit): the job file's security section with curve: true");
  app.add_option("--progress", progress,
                 "Progress display: auto (in place on a terminal, else plain lines), plain, none")
      ->check(CLI::IsMember({"auto", "plain", "none"}));
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "Write checkpoints into this directory (checkpoint.dir; default <run dir>/checkpoints, "
                 "but in mode auto; empty: none); with them, a lost server can be replaced");
  app.add_option("--checkpoint-interval", o.checkpoint_interval,
                 "Seconds between checkpoints (checkpoint.interval_seconds; 0: by time never)")
      ->check(CLI::Range(0, 86400 * 7));
  app.add_option("--checkpoint-keep", o.checkpoint_keep, "Committed checkpoints kept (checkpoint.keep)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--model-out", o.model_out,
                 "Write the trained model here at the end, as safetensors (model_out; default <run "
                 "dir>/model.safetensors)");
  std::string data_dir;
  app.add_option("--data-dir", data_dir,
                 "Relative paths of the job's data section are read under this directory (default: the "
                 "current one); the scheduler reads the training split to count its samples");
  int corrupt_served_replies = 0;
  app.add_option("--inject-corrupt-data", corrupt_served_replies,
                 "Testing: change a byte in the first N served replies (data, model file) after their "
                 "checksum")
      ->group("");
  std::string resume;
  app.add_option("--resume", resume,
                 "Continue the job of a checkpoint: a checkpoint's directory, or a directory of "
                 "checkpoints (the newest committed one). The job is the checkpoint's; flags still "
                 "override it")
      ->excludes("--config");
  std::string run_dir;
  app.add_option("--run-dir", run_dir,
                 "Where the outputs the job does not place go: summary.json, model.safetensors, "
                 "checkpoints/ (not in mode auto), job.yaml (default runs/<date-time> here; a resumed "
                 "job gets a new one)");
  bool no_checkpoints = false;
  app.add_flag("--no-checkpoints", no_checkpoints,
               "Take no checkpoints (a lost server then ends the job, and a stop cannot be resumed)")
      ->excludes("--checkpoint-dir");
  std::string endpoint_file;
  bool check_only = false;
  app.add_flag("--check", check_only,
               "Validate the job, print it as YAML with every default filled in, and exit");
  app.add_option("--endpoint-file", endpoint_file,
                 "Write the endpoint actually bound (useful with port *) to this file");
  hetps::AddLogLevelFlag(app, &log_level);
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  hetps::ApplyLogLevel(log_level);

  hetps::JobOptions job;
  if (!config_path.empty()) {
    auto loaded = hetps::LoadJobFile(config_path);
    if (!loaded.ok()) return hetps::FatalError("hetps-scheduler", loaded.status());
    job = std::move(*loaded);
  }
  std::string resume_from;
  if (!resume.empty()) {
    // Read and verified whole now (sizes, checksums, every partition), so that a damaged
    // checkpoint is refused before any member is started; the servers get it later.
    auto checkpoint = hetps::LoadCheckpoint(hetps::PosixFileSystem(), resume);
    if (!checkpoint.ok())
      return hetps::FatalError("hetps-scheduler", checkpoint.status().WithContext("--resume"));
    const std::string checkpoint_dir = checkpoint->path;
    for (const std::string& why : checkpoint->skipped) {
      HETPS_LOG(WARNING) << "--resume: passed over a damaged checkpoint: " << why;
    }
    resume_from = checkpoint_dir;
    auto loaded = hetps::ParseJobYaml(checkpoint->manifest.job_yaml, checkpoint_dir + "/manifest.json (job)");
    if (!loaded.ok()) return hetps::FatalError("hetps-scheduler", loaded.status());
    job = std::move(*loaded);
    // A directory of checkpoints the job named given: the resumed job goes on writing there. (The
    // run directory's is not in the checkpoint's job: a resumed run writes into a new one.)
    if (checkpoint_dir != resume && !job.checkpoint.dir.empty()) job.checkpoint.dir = resume;
  }
  hetps::Status status = ApplyOverrides(app, o, &job);
  if (!status.ok()) return hetps::FatalError("hetps-scheduler", status);
  if (no_checkpoints) job.checkpoint.dir.clear();
  // An empty --checkpoint-dir takes none, as --no-checkpoints does.
  const bool run_dir_checkpoints = !no_checkpoints && app.get_option("--checkpoint-dir")->count() == 0;
  const hetps::RunDirectory run =
      hetps::FillFromRunDir(run_dir.empty() ? hetps::DefaultRunDir() : run_dir, run_dir_checkpoints, &job);

  if (check_only) {
    std::fputs(hetps::JobOptionsToYaml(job).c_str(), stdout);
    return 0;
  }

  status = hetps::CreateRunDir(run, job, resume_from);
  if (!status.ok()) return hetps::FatalError("hetps-scheduler", status);
  HETPS_LOG(INFO) << "run directory " << run.path;
  hetps::SchedulerOptions options;
  options.job = job;
  options.run_dir = run;
  options.progress_out = progress == "none" ? nullptr : stdout;
  options.progress_in_place = progress == "auto" && hetps::IsTerminal(stdout);
  options.endpoint_file = endpoint_file;
  options.stop = &g_stop;
  options.stop_after_checkpoint = &g_stop_after_checkpoint;
  options.resume = resume_from;  // the checkpoint chosen above, not the newest one then
  if (!job.data.format.empty() || job.data.serve) {
    // The built-in data set, served: its files under --data-dir (default: where Debian puts them).
    const hetps::DataOptions data =
        job.data.format.empty() ? hetps::FashionMnistOptions(data_dir.empty() ? kFashionMnistDir : data_dir)
                                : job.data;
    auto train = hetps::LoadDataset(data, hetps::DatasetSplit::kTrain, data_dir);
    if (!train.ok()) return hetps::FatalError("hetps-scheduler", train.status().WithContext("data.train"));
    options.train_data = std::make_shared<const hetps::HostDataset>(std::move(*train));
    if (options.train_data->tokens) {
      // Trainers check their token files against the vocabulary and id type found here.
      options.job.data.vocab = options.train_data->classes;
      options.job.data.token_dtype = hetps::TokenDTypeName(options.train_data->tokens->dtype());
      HETPS_LOG(INFO) << "token data: " << options.train_data->tokens->size() << " training tokens in "
                      << options.train_data->source << ", vocabulary " << options.job.data.vocab << ", "
                      << options.train_data->samples << " windows of " << job.data.context << " per epoch";
    }
    if (job.data.serve) {
      auto test = hetps::LoadDataset(data, hetps::DatasetSplit::kTest, data_dir, options.train_data->classes);
      if (!test.ok()) return hetps::FatalError("hetps-scheduler", test.status().WithContext("data.test"));
      options.test_data = std::make_shared<const hetps::HostDataset>(std::move(*test));
    }
  }
  options.corrupt_served_replies = corrupt_served_replies;
  // The HTTP server reads the snapshots the scheduler's loop publishes on `board`, on its own thread.
  hetps::SnapshotBoard board;
  std::unique_ptr<hetps::HttpServer> http;
  if (!job.http.listen.empty()) {
    hetps::HttpServerOptions http_options;
    http_options.listen = job.http.listen;
    http = std::make_unique<hetps::HttpServer>(board, http_options);
    status = http->Start();
    if (!status.ok()) return hetps::FatalError("hetps-scheduler", status.WithContext("--http / http.listen"));
    HETPS_LOG(INFO) << "status page on " << http->url() << " (JSON at status, Prometheus at metrics)";
    if (!http_url_file.empty()) {
      status = hetps::WriteFileAtomically(http_url_file, http->url() + "\n");
      if (!status.ok()) return hetps::FatalError("hetps-scheduler", status);
    }
    options.status_board = &board;
  }
  // Started with SIGINT ignored (in the background of a script, as the launchers start it), it
  // keeps ignoring it: a Ctrl-C there is the script's, which stops the job with SIGTERM.
  if (std::signal(SIGINT, RequestStop) == SIG_IGN) std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, RequestStop);
  zmq::context_t context(1);
  hetps::Scheduler scheduler(context, options);
  status = scheduler.Run();
  const hetps::RunSummary& summary = scheduler.summary();
  if (!status.ok()) return hetps::FatalError("hetps-scheduler", status);
  const bool r2 = summary.metric == "r2";
  char measure[160];
  if (summary.metric == "perplexity") {
    std::snprintf(measure, sizeof(measure), "perplexity %.3f (%.3f bits/token, next-token accuracy %.4f, ",
                  summary.final_test_perplexity, summary.final_test_bits_per_token,
                  summary.final_test_accuracy);
  } else {
    std::snprintf(measure, sizeof(measure), "%s %.4f (", r2 ? "R2" : "accuracy",
                  r2 ? summary.final_test_r2 : summary.final_test_accuracy);
  }
  std::printf("final test %stest loss %.4f) after %u epoch%s; %.0f samples/s over %.1f s%s%s\n", measure,
              summary.final_test_loss, summary.epochs, summary.epochs == 1 ? "" : "s",
              summary.samples_per_second, summary.wall_seconds, job.summary.empty() ? "" : "; summary in ",
              job.summary.c_str());
  return 0;
}
