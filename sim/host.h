// The host of the board: an input pipeline producing examples at a configured rate, PCIe
// per chip carrying each core's share of a batch into its HBM (infeed), and the training
// loop that dispatches steps_per_execution steps at a time, paying the dispatch overhead
// of the host attachment (TPU VM or TPU Node) per dispatch.
//
// Infeed convention for device programs: the batch of step s lands at
// `infeed_hbm_address` of each core, and then sync flag `infeed_flag` gains 1; a step's
// program waits on it ("wait seq, f31, 1") before reading the batch.
#pragma once

#include <cstdint>
#include <map>
#include <systemc>
#include <vector>

#include "sim/config.h"
#include "sim/memory_port.h"
#include "sim/tensor_core.h"

namespace tpusim::sim {

struct TrainingLoop {
  int steps = 1;
  int steps_per_execution = 1;      // K: one dispatch runs K steps on the device
  int64_t global_batch = 8;         // split evenly over the cores
  uint64_t example_bytes = 0;       // infeed bytes per example (0: no infeed)
  double input_examples_per_s = 0;  // input pipeline rate; 0 = unbounded
  int prefetch_batches = 2;         // batches the pipeline may run ahead
  uint64_t infeed_hbm_address = 0;
  int infeed_flag = 31;
};

struct HostReport {
  TimeFs dispatch_overhead_fs = 0;  // host time spent dispatching, all dispatches
  int dispatches = 0;
  std::vector<TimeFs> step_end_fs;     // when every core had finished step s
  std::vector<TimeFs> batch_ready_fs;  // when the input pipeline produced batch s
};

class Host : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Host);
  Host(sc_core::sc_module_name name, const BoardConfig& board, const TrainingLoop& loop,
       std::vector<TensorCore*> cores);
  const HostReport& report() const { return report_; }
  // Dispatch overhead the model predicts for the loop: ceil(steps / K) dispatches.
  static double PredictedDispatchOverheadFs(const BoardConfig& board, const TrainingLoop& loop);

 private:
  void RunLoop();
  void RunInput();
  void RunLandings();
  uint32_t StepsDoneByAll() const;
  void WaitForSteps(uint32_t steps);

  const BoardConfig& board_;
  TrainingLoop loop_;
  std::vector<TensorCore*> cores_;
  std::vector<BandwidthChannel> pcie_;  // per chip
  HostReport report_;
  std::multimap<TimeFs, size_t> landings_;  // batch landing time -> core index
  sc_core::sc_event landing_added_;
};

}  // namespace tpusim::sim
