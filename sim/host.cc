#include "sim/host.h"

#include <algorithm>
#include <cmath>

namespace tpusim::sim {
namespace {
TimeFs Us(double us) { return static_cast<TimeFs>(std::llround(us * 1e9)); }
}  // namespace

Host::Host(sc_core::sc_module_name name, const BoardConfig& board, const TrainingLoop& loop,
           std::vector<TensorCore*> cores)
    : sc_module(name), board_(board), loop_(loop), cores_(std::move(cores)) {
  for (int c = 0; c < board.chips; ++c) pcie_.emplace_back(board.host.pcie_bandwidth_bytes_per_s);
  for (TensorCore* core : cores_) core->SetHosted(loop.infeed_flag);
  SC_THREAD(RunLoop);
  if (loop_.example_bytes > 0) {
    SC_THREAD(RunInput);
    SC_THREAD(RunLandings);
  }
}

double Host::PredictedDispatchOverheadFs(const BoardConfig& board, const TrainingLoop& loop) {
  int k = std::max(1, loop.steps_per_execution);
  int dispatches = (loop.steps + k - 1) / k;
  return dispatches * static_cast<double>(Us(board.host.dispatch_overhead_us));
}

uint32_t Host::StepsDoneByAll() const {
  uint32_t done = UINT32_MAX;
  for (TensorCore* c : cores_) done = std::min(done, c->sequencer().steps_done());
  return done;
}

void Host::WaitForSteps(uint32_t steps) {
  while (StepsDoneByAll() < steps) {
    sc_core::sc_event_or_list any;
    for (TensorCore* c : cores_) any |= c->sequencer().step_done();
    wait(any);
    while (report_.step_end_fs.size() < StepsDoneByAll())
      report_.step_end_fs.push_back(sc_core::sc_time_stamp().value());
  }
}

// The training loop: per dispatch, the host's own overhead, then the launch of up to K
// steps; the host waits for them (to read back the loss) before the next dispatch.
void Host::RunLoop() {
  const int k = std::max(1, loop_.steps_per_execution);
  for (int done = 0; done < loop_.steps;) {
    int batch = std::min(k, loop_.steps - done);
    TimeFs begin = sc_core::sc_time_stamp().value();
    wait(sc_core::sc_time::from_value(Us(board_.host.dispatch_overhead_us)));
    report_.dispatch_overhead_fs += Us(board_.host.dispatch_overhead_us);
    ++report_.dispatches;
    wait(sc_core::sc_time::from_value(Us(board_.host.launch_latency_us)));
    for (TensorCore* c : cores_) {  // the cores sat idle while the host dispatched
      if (!c->ctx().sink) continue;
      c->ctx().sink->OnHost(
          HostRecord{static_cast<uint16_t>(c->ctx().core), HostKind::kHostOverhead, begin,
                     sc_core::sc_time_stamp().value(), static_cast<uint32_t>(done)});
    }
    for (TensorCore* c : cores_) c->Launch(static_cast<uint32_t>(batch));
    done += batch;
    WaitForSteps(static_cast<uint32_t>(done));
  }
  for (TensorCore* c : cores_) c->Close();
}

// The input pipeline: batch s is ready at (s + 1) x global batch / rate, no more than
// prefetch_batches ahead of the device; then each core's share crosses its chip's PCIe.
void Host::RunInput() {
  const uint64_t per_core = static_cast<uint64_t>(loop_.global_batch) / cores_.size();
  const uint64_t bytes = per_core * loop_.example_bytes;
  const double batch_fs =
      loop_.input_examples_per_s > 0 ? loop_.global_batch / loop_.input_examples_per_s * 1e15 : 0;
  TimeFs produced = 0;
  for (int s = 0; s < loop_.steps; ++s) {
    if (s >= loop_.prefetch_batches)
      WaitForSteps(static_cast<uint32_t>(s - loop_.prefetch_batches + 1));
    TimeFs now = sc_core::sc_time_stamp().value();
    produced = std::max<TimeFs>(produced + static_cast<TimeFs>(batch_fs), now);
    if (produced > now) wait(sc_core::sc_time::from_value(produced - now));
    report_.batch_ready_fs.push_back(produced);
    now = sc_core::sc_time_stamp().value();
    TimeFs arrive = now + Us(board_.host.pcie_latency_us);
    std::vector<TimeFs> landed(cores_.size());
    for (size_t i = 0; i < cores_.size(); ++i) {
      int chip = cores_[i]->ctx().core / board_.cores_per_chip;
      landed[i] = pcie_[chip].Reserve(now, arrive, bytes);
    }
    // The next batch does not wait for this one to land: PCIe transfers pipeline.
    for (size_t i = 0; i < cores_.size(); ++i) landings_.emplace(landed[i], i);
    landing_added_.notify(sc_core::SC_ZERO_TIME);
  }
}

// Tells each core its batch has landed, at the landing time, in time order.
void Host::RunLandings() {
  for (;;) {
    while (landings_.empty()) wait(landing_added_);
    auto [at, core] = *landings_.begin();
    TimeFs now = sc_core::sc_time_stamp().value();
    if (at > now) {
      wait(sc_core::sc_time::from_value(at - now), landing_added_);  // an earlier one may come
      continue;
    }
    landings_.erase(landings_.begin());
    cores_[core]->ctx().flags.Add(loop_.infeed_flag, 1);
  }
}

}  // namespace tpusim::sim
