// PartitionWorkers on its own: each owner runs its tasks in the order posted, a dispatch over
// several owners finishes once on the I/O thread after all its parts, the wake-up descriptor
// tells when, and stopping with tasks still queued runs them and ends cleanly.
#include <poll.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ps/partition_workers.h"

namespace hetps {
namespace {

bool Readable(int fd, std::chrono::milliseconds timeout) {
  pollfd item{fd, POLLIN, 0};
  return ::poll(&item, 1, static_cast<int>(timeout.count())) == 1;
}

}  // namespace

CATCH_TEST_CASE("Each owner runs its tasks in the order they were posted", "[ps][workers]") {
  for (size_t threads : {size_t{1}, size_t{3}}) {
    CATCH_SECTION(std::to_string(threads) + " threads") {
      PartitionWorkers workers(threads);
      CATCH_CHECK(workers.threads() == threads);
      constexpr int kTasks = 2000;
      // One log per owner, written only by that owner's tasks: no lock.
      std::vector<std::vector<int>> logs(threads);
      std::vector<std::thread::id> ran_on(threads);
      for (int k = 0; k < kTasks; ++k) {
        const size_t owner = workers.OwnerOf(static_cast<size_t>(k));
        workers.Post(owner, [&logs, &ran_on, owner, k] {
          logs[owner].push_back(k);
          ran_on[owner] = std::this_thread::get_id();
        });
      }
      workers.Flush();
      for (size_t owner = 0; owner < threads; ++owner) {
        CATCH_REQUIRE(logs[owner].size() == kTasks / threads + (owner < kTasks % threads ? 1 : 0));
        for (size_t j = 0; j < logs[owner].size(); ++j) {
          CATCH_CHECK(logs[owner][j] == static_cast<int>(owner + j * threads));
        }
        // One thread runs inline; more run off the I/O thread.
        CATCH_CHECK((ran_on[owner] == std::this_thread::get_id()) == (threads == 1));
      }
    }
  }
}

CATCH_TEST_CASE("A dispatch over several owners finishes on the I/O thread once all parts ran",
                "[ps][workers]") {
  PartitionWorkers workers(3);
  CATCH_REQUIRE(workers.wake_fd() >= 0);
  CATCH_CHECK_FALSE(Readable(workers.wake_fd(), std::chrono::milliseconds(0)));
  // Owner 1 is held up, so the dispatch cannot finish before it is released.
  std::atomic<bool> release{false};
  workers.Post(1, [&release] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::vector<int> parts(3, 0);
  int done = 0;
  std::thread::id done_on;
  std::vector<PartitionWorkers::Part> work;
  for (size_t owner = 0; owner < 3; ++owner) {
    work.push_back({owner, [&parts, owner] { parts[owner] = static_cast<int>(owner) + 10; }});
  }
  workers.Dispatch(std::move(work), [&] {
    ++done;
    done_on = std::this_thread::get_id();
    CATCH_CHECK(parts == std::vector<int>{10, 11, 12});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  workers.RunFinished();
  CATCH_CHECK(done == 0);
  CATCH_CHECK_FALSE(Readable(workers.wake_fd(), std::chrono::milliseconds(0)));

  release.store(true);
  CATCH_REQUIRE(Readable(workers.wake_fd(), std::chrono::seconds(10)));
  CATCH_CHECK(done == 0);  // nothing runs on the I/O thread behind its back
  workers.RunFinished();
  CATCH_CHECK(done == 1);
  CATCH_CHECK(done_on == std::this_thread::get_id());
  CATCH_CHECK_FALSE(Readable(workers.wake_fd(), std::chrono::milliseconds(0)));
  workers.RunFinished();
  CATCH_CHECK(done == 1);
}

CATCH_TEST_CASE("With one thread a dispatch runs its parts and finishes before returning", "[ps][workers]") {
  PartitionWorkers workers(1);
  CATCH_CHECK(workers.wake_fd() == -1);
  std::vector<int> order;
  workers.Dispatch({{0, [&order] { order.push_back(1); }}, {0, [&order] { order.push_back(2); }}},
                   [&order] { order.push_back(3); });
  CATCH_CHECK(order == std::vector<int>{1, 2, 3});
  workers.Dispatch({}, [&order] { order.push_back(4); });
  CATCH_CHECK(order == std::vector<int>{1, 2, 3, 4});
}

CATCH_TEST_CASE("Stopping with tasks queued runs them, joins the threads and drops what is unfinished",
                "[ps][workers]") {
  std::atomic<int> ran{0};
  int done = 0;
  {
    PartitionWorkers workers(3);
    for (int k = 0; k < 300; ++k) {
      workers.Post(workers.OwnerOf(static_cast<size_t>(k)), [&ran] {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        ++ran;
      });
    }
    workers.Dispatch({{0, [&ran] { ++ran; }}, {2, [&ran] { ++ran; }}}, [&done] { ++done; });
    workers.Stop();
    CATCH_CHECK(ran.load() == 302);
    workers.RunFinished();
    workers.Stop();  // idempotent, and so is the destructor after it
  }
  CATCH_CHECK(done == 0);
  CATCH_CHECK(ran.load() == 302);
}

}  // namespace hetps
