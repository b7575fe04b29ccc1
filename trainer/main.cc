// hetps-trainer: one trainer. Needs the scheduler's address, its device and where its data lives;
// the model, mode, batch size and everything else arrive from the scheduler.
#include <ATen/Parallel.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "common/allocator.h"
#include "common/cli.h"
#include "common/job_config.h"
#include "common/logging.h"
#include "security/member_curve.h"
#include "trainer/data_cache.h"
#include "trainer/model_fetcher.h"
#include "trainer/trainer.h"

namespace {

std::atomic<bool> g_leave{false};

// Ctrl-C or SIGTERM: leave the job cleanly. A second one ends the process at once.
void RequestLeave(int signal) {
  g_leave.store(true);
  std::signal(signal, SIG_DFL);
}

}  // namespace

int main(int argc, char** argv) {
  hetps::KeepLargeBuffersMapped();  // first, before any thread or large buffer exists
  hetps::TrainerOptions options;
  std::string log_level;
  int threads = 1;
  double connect_timeout_s = 60;
  CLI::App app(
      "hetps trainer: computes gradients with LibTorch on its device, pushes them to the "
      "servers and pulls fresh weights.",
      "hetps-trainer");
  hetps::AddEndpointOption(app, "--scheduler", &options.scheduler,
                           "Scheduler control endpoint, HOST:PORT or tcp://HOST:PORT")
      ->default_val(options.scheduler);
  app.add_option("--device", options.device,
                 "Device: auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N, mps")
      ->default_val(options.device);
  app.add_option("--data-dir", options.data_dir,
                 "Directory with the Fashion-MNIST .gz files; relative paths of the job's data section are "
                 "read under it")
      ->default_val(options.data_dir);
  app.add_option("--model-file", options.model_file,
                 "This machine's copy of the job's TorchScript file, when it is not at the path the "
                 "scheduler names (its checksum must match). Without either, the trainer fetches the file "
                 "from the scheduler");
  options.model_cache_dir = hetps::DefaultModelCacheDir(std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  app.add_option("--model-cache", options.model_cache_dir,
                 "Where TorchScript files fetched from the scheduler are kept, as CRC.pt; a later start "
                 "finds the file there instead of fetching it again")
      ->default_val(options.model_cache_dir);
  app.add_option("--threads", threads,
                 "Compute threads for LibTorch on the CPU (default 1: processes sharing a machine "
                 "slow each other down badly with more)")
      ->default_val(threads)
      ->check(CLI::Range(1, 256));
  app.add_option("--slowdown", options.slowdown,
                 "Make each step K times as long as its compute time by sleeping for the rest, to "
                 "reproduce a slower machine (K >= 1)")
      ->default_val(options.slowdown)
      ->check(CLI::Range(1.0, 1000.0));
  app.add_flag("--data-from-scheduler", options.data_from_scheduler,
               "Take the training and test data from the scheduler (the job must say serve: true in its data "
               "section), even when the files are here; received samples are kept for the next epoch");
  options.data_cache = hetps::DefaultDataCacheRoot(std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  std::string data_cache = options.data_cache.empty() ? "off" : options.data_cache;
  app.add_option("--data-cache", data_cache,
                 "Where data served by the scheduler is kept on this machine, one directory per data set, "
                 "so that the next run reads it from disk instead of the network ($XDG_CACHE_HOME/hetps/data "
                 "or ~/.cache/hetps/data); off: nowhere")
      ->default_val(data_cache);
  std::string data_cache_limit = "20G";
  app.add_option("--data-cache-limit", data_cache_limit,
                 "The most the data cache may hold, as bytes or with K, M, G or T (powers of 1024); past it "
                 "the data sets least recently used are removed, never one used within the last hour; 0 or "
                 "none: no limit")
      ->default_val(data_cache_limit)
      ->type_name("SIZE")
      ->check([](const std::string& value) {
        auto limit = hetps::ParseDataCacheLimit(value);
        return limit.ok() ? std::string() : limit.status().message();
      });
  bool no_overlap = false;
  app.add_flag("--no-overlap", no_overlap,
               "Push the gradients after backward instead of each as soon as backward has produced it");
  app.add_flag("--forward-during-pull", options.forward_during_pull,
               "Async and ssp: start the next step's forward on the weights at hand while the last "
               "step's weights travel, taking them in after its backward (each gradient is then one "
               "step staler; ssp needs staleness >= 1)");
  app.add_option("--local-steps", options.local_steps,
                 "Async and ssp with optimizer sgd: take this many steps on this trainer's own copy of "
                 "the weights between pushes, and push their mean gradient (for a machine whose "
                 "transfers of the model take longer than its step, e.g. on a slow link)")
      ->default_val(options.local_steps)
      ->check(CLI::Range(uint32_t{1}, hetps::kMaxLocalSteps));
  int64_t reply_spin_us = options.reply_spin.count();
  app.add_option(
         "--reply-spin-us", reply_spin_us,
         "Microseconds to look for a server's reply, yielding the core between looks, before "
         "sleeping until it comes: a quick reply then costs no wake-up of a sleeping thread (0: sleep "
         "at once, for a machine whose cores are all busy or CPU time is rationed)")
      ->default_val(reply_spin_us)
      ->check(CLI::Range(int64_t{0}, int64_t{10000}));
  app.add_option("--connect-timeout", connect_timeout_s, "Seconds to keep trying to reach the scheduler")
      ->default_val(connect_timeout_s)
      ->check(CLI::Range(0.1, 86400.0));
  hetps::MemberCurveFlags curve;
  hetps::AddMemberCurveFlags(app, "trainer", &curve);
  hetps::AddLogLevelFlag(app, &log_level);
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  hetps::ApplyLogLevel(log_level);
  auto keys = hetps::LoadMemberCurve(curve, hetps::KeyRole::kTrainer);
  if (!keys.ok()) return hetps::FatalError("hetps-trainer", keys.status());
  options.curve = *keys;
  options.overlap = !no_overlap;
  options.reply_spin = std::chrono::microseconds(reply_spin_us);
  options.data_cache = data_cache == "off" ? "" : data_cache;
  options.data_cache_limit_bytes = hetps::ParseDataCacheLimit(data_cache_limit).value();
  options.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(connect_timeout_s * 1000));

  // The inter-op pool must be sized before LibTorch starts any parallel work.
  at::set_num_interop_threads(1);
  at::set_num_threads(threads);

  zmq::context_t context(1);
  hetps::Trainer trainer(context, options);
  // The handler only sets a flag; this thread turns it into Leave(), which takes locks.
  // Started with SIGINT ignored (in the background of a script, as the launchers start it), it
  // keeps ignoring it: a Ctrl-C there is the script's, which stops the job through the scheduler.
  if (std::signal(SIGINT, RequestLeave) == SIG_IGN) std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, RequestLeave);
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!finished.load()) {
      if (g_leave.load()) {
        trainer.Leave();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  hetps::Status status = trainer.Run();
  finished.store(true);
  watcher.join();
  if (!status.ok()) return hetps::FatalError("hetps-trainer", status);
  return 0;
}
