// Top level of a run: build the cores, run SystemC to completion, report. SystemC
// elaborates once per process, so a process runs one Simulation.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/config.h"
#include "sim/host.h"
#include "sim/ici_fabric.h"
#include "sim/tensor_core.h"

namespace tpusim::sim {

// Where a run stands, as Run() reports it to RunOptions::on_progress.
struct RunProgress {
  TimeFs simulated_fs = 0;  // simulated time reached
  int steps_done = 0;       // steps every core has ended (0 without a training loop)
};

struct RunOptions {
  bool functional = true;         // false: timing only, no values
  IActivitySink* sink = nullptr;  // profiler, optional
  // Each unit's busy time as the union of its intervals (UnitReport::busy_fs). A run whose
  // profiler computes busy time itself may turn it off: busy_fs is then 0, and the
  // instruction counts remain.
  bool unit_busy = true;
  // Optional: Run() simulates in slices of `progress_interval_fs` (skipping spans
  // without events) and calls this after each slice, the last one included. Results are
  // identical with or without it.
  std::function<void(const RunProgress&)> on_progress = nullptr;
  TimeFs progress_interval_fs = 10'000'000'000;  // 10 simulated microseconds
  // Optional: called inside the simulation when a core has ended a step (its units
  // drained, its memories final for that step) and before it starts the next. It must not
  // block; its memories may be read.
  std::function<void(int core, int step)> on_core_step_end = nullptr;
};

struct UnitReport {
  std::string name;    // "seq", "dma", "mxu0", ...
  TimeFs busy_fs = 0;  // 0 with RunOptions::unit_busy off
  uint64_t instructions = 0;
  double busy_percent = 0;
};

struct RunReport {
  bool ok = false;
  std::string error;  // the first error, or the deadlock report
  TimeFs end_fs = 0;
  int64_t cycles = 0;
  double time_us = 0;
  uint64_t host_events = 0;                    // SystemC delta cycles executed (simulator cost)
  std::vector<UnitReport> units;               // of core 0
  std::vector<std::vector<UnitReport>> cores;  // every core, by index
};

class Simulation {
 public:
  Simulation(const BoardConfig& board, RunOptions options);
  ~Simulation();
  // Build: one program per core, cores 0..n-1 (n <= board cores).
  TensorCore& AddCore(const isa::Program& program);
  TensorCore& core(int i) { return *cores_[i]; }
  IciFabric* fabric() { return fabric_.get(); }
  // Optional: a host drives the cores through a training loop (sim/host.h). Call after
  // adding the cores and before Run().
  void SetTrainingLoop(const TrainingLoop& loop);
  const Host* host() const { return host_.get(); }
  RunReport Run();

 private:
  BoardConfig board_;
  RunOptions options_;
  std::string error_;
  std::vector<std::unique_ptr<isa::Program>> programs_;
  std::vector<std::unique_ptr<TensorCore>> cores_;
  std::vector<CoreContext*> peers_;
  std::unique_ptr<IciFabric> fabric_;
  std::unique_ptr<Host> host_;
  void Connect();
  void RunInSlices();
};

}  // namespace tpusim::sim
