// The sequencer's and unit queues' structures against the library ones they replaced:
// QuantumKeeper makes exactly tlm_quantumkeeper's sync decisions at the same simulated
// times, and RingQueue is a FIFO like std::deque that releases what it pops.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <systemc>
#include <vector>

#include <tlm_utils/tlm_quantumkeeper.h>

#include "sim/quantum_keeper.h"
#include "sim/ring_queue.h"

namespace tpusim::sim {
namespace {

// One line per step: simulated time, local time and whether a sync was needed.
struct Step {
  uint64_t now, local;
  bool sync;
  bool operator==(const Step&) const = default;
};

// Two threads run the same random program of increments, syncs and plain waits, one
// with each keeper.
struct KeeperPair : sc_core::sc_module {
  SC_HAS_PROCESS(KeeperPair);
  std::vector<Step> library_log, ours_log;
  explicit KeeperPair(sc_core::sc_module_name name) : sc_module(name) {
    SC_THREAD(RunLibrary);
    SC_THREAD(RunOurs);
  }
  template <typename Inc, typename Need, typename Sync, typename Local>
  void Drive(std::vector<Step>& log, Inc inc, Need need, Sync sync, Local local) {
    std::mt19937_64 rng(3);
    for (int i = 0; i < 20000; ++i) {
      const uint64_t r = rng();
      if (r % 50 == 0) {
        wait(sc_core::sc_time::from_value(rng() % 500'000'000));  // blocked on a queue or flag
      } else if (r % 97 == 0) {
        sync();  // a sync forced by a flag instruction
      } else {
        inc(1 + rng() % 300'000'000);
      }
      const bool needed = need();
      log.push_back({sc_core::sc_time_stamp().value(), local(), needed});
      if (needed) sync();
    }
  }
  void RunLibrary() {
    tlm_utils::tlm_quantumkeeper qk;
    qk.reset();
    Drive(
        library_log, [&](uint64_t t) { qk.inc(sc_core::sc_time::from_value(t)); },
        [&] { return qk.need_sync(); }, [&] { qk.sync(); },
        [&] { return qk.get_local_time().value(); });
  }
  void RunOurs() {
    QuantumKeeper qk;
    qk.Reset();
    Drive(
        ours_log, [&](uint64_t t) { qk.Inc(t); }, [&] { return qk.NeedSync(); }, [&] { qk.Sync(); },
        [&] { return qk.local_time(); });
  }
};

TEST(QuantumKeeper, SameSyncPointsAsTlmQuantumKeeper) {
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  tlm::tlm_global_quantum::instance().set(sc_core::sc_time::from_value(1'063'830'000));
  KeeperPair pair("pair");
  sc_core::sc_start();
  ASSERT_EQ(pair.ours_log.size(), 20000u);
  int syncs = 0;
  for (size_t i = 0; i < pair.ours_log.size(); ++i) {
    ASSERT_EQ(pair.ours_log[i], pair.library_log[i]) << "step " << i;
    syncs += pair.ours_log[i].sync;
  }
  EXPECT_GT(syncs, 1000);  // the program crosses many quanta
}

TEST(RingQueue, FifoOrderLikeDequeAndReleasesPoppedItems) {
  std::mt19937_64 rng(5);
  RingQueue<std::shared_ptr<int>> ring;
  std::deque<std::shared_ptr<int>> ref;
  auto tracked = std::make_shared<int>(-1);
  for (int i = 0; i < 100000; ++i) {
    const size_t cap = i < 50000 ? 6 : 100;  // grows past the first ring size
    if (ref.size() < cap && (ref.empty() || rng() % 2 == 0)) {
      auto item = i % 1000 == 0 ? tracked : std::make_shared<int>(i);
      ring.push_back(item);
      ref.push_back(item);
    } else {
      ASSERT_EQ(ring.front(), ref.front());
      ASSERT_EQ(ring.pop_front(), ref.front());
      ref.pop_front();
    }
    ASSERT_EQ(ring.size(), ref.size());
  }
  while (!ref.empty()) {
    ASSERT_EQ(ring.pop_front(), ref.front());
    ref.pop_front();
  }
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(tracked.use_count(), 1);  // no copy left behind in the ring
}

}  // namespace
}  // namespace tpusim::sim
