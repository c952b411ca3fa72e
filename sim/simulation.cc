#include "sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tpusim::sim {
namespace {
bool g_elaborated = false;
}

Simulation::Simulation(const BoardConfig& board, RunOptions options)
    : board_(board), options_(options) {
  if (g_elaborated)
    throw std::logic_error("SystemC elaborates once per process: run one Simulation per process");
  g_elaborated = true;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  // Unit errors are reported through RunReport; keep SystemC's own reports quiet.
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
}

Simulation::~Simulation() = default;

TensorCore& Simulation::AddCore(const isa::Program& program) {
  int index = static_cast<int>(cores_.size());
  if (index >= board_.cores())
    throw std::logic_error("board " + board_.name + " has only " + std::to_string(board_.cores()) +
                           " cores");
  programs_.push_back(std::make_unique<isa::Program>(program));
  cores_.push_back(std::make_unique<TensorCore>(("core" + std::to_string(index)).c_str(), index,
                                                board_.core, *programs_.back(), options_.functional,
                                                options_.sink, &error_));
  cores_.back()->ctx().unit_busy = options_.unit_busy;
  peers_.push_back(&cores_.back()->ctx());
  cores_.back()->ctx().peers = &peers_;
  return *cores_.back();
}

// Connect: every router's default route leads to the fabric, which reaches every core's
// memory ports.
void Simulation::Connect() {
  fabric_ = std::make_unique<IciFabric>("ici", board_);
  for (auto& c : cores_) {
    c->router().out.bind(fabric_->in);
    c->router().SetDefaultRoute(TensorCore::kLocalMemoryPorts);  // after the core's memories
  }
  for (auto& c : cores_) {
    fabric_->out.bind(c->hbm_port().socket);
    fabric_->out.bind(c->vmem_port().socket);
  }
}

void Simulation::SetTrainingLoop(const TrainingLoop& loop) {
  std::vector<TensorCore*> cores;
  for (auto& c : cores_) cores.push_back(c.get());
  host_ = std::make_unique<Host>("host", board_, loop, cores);
}

// Same events in the same order as one sc_start(): each slice ends at the last event
// before its end (SC_EXIT_ON_STARVATION, so time never runs past the final event) and
// the next resumes from there. A slice ends at least at the next pending event, so gaps
// without events cost one slice.
void Simulation::RunInSlices() {
  const TimeFs interval = std::max<TimeFs>(options_.progress_interval_fs, 1);
  TimeFs slice_end = 0, next_event = 0;
  do {
    slice_end = std::max(slice_end + interval, next_event);
    const TimeFs now = sc_core::sc_time_stamp().value();
    sc_core::sc_start(sc_core::sc_time::from_value(slice_end - now),
                      sc_core::SC_EXIT_ON_STARVATION);
    const int steps = host_ ? static_cast<int>(host_->report().step_end_fs.size()) : 0;
    options_.on_progress(RunProgress{sc_core::sc_time_stamp().value(), steps});
    next_event = sc_core::sc_time_stamp().value() + sc_core::sc_time_to_pending_activity().value();
  } while (sc_core::sc_get_status() != sc_core::SC_STOPPED && sc_core::sc_pending_activity());
}

RunReport Simulation::Run() {
  Connect();
  if (options_.on_core_step_end)
    for (size_t c = 0; c < cores_.size(); ++c)
      cores_[c]->sequencer().SetStepEndHook([this, c](uint32_t step) {
        options_.on_core_step_end(static_cast<int>(c), static_cast<int>(step));
      });
  if (options_.on_progress)
    RunInSlices();
  else
    sc_core::sc_start();
  RunReport r;
  r.host_events = sc_core::sc_delta_count();
  r.end_fs = sc_core::sc_time_stamp().value();
  bool all_done = true;
  for (auto& c : cores_) all_done = all_done && c->finished();
  if (!error_.empty()) {
    r.error = error_;
  } else if (!all_done) {
    r.error = "deadlock: no unit can make progress";
    for (auto& c : cores_)
      for (const std::string& line : c->BlockedUnits()) r.error += "\n  " + line;
  }
  r.ok = r.error.empty();
  const CoreConfig& cc = board_.core;
  r.cycles = std::llround(static_cast<double>(r.end_fs) / cc.cycle_fs());
  r.time_us = static_cast<double>(r.end_fs) / 1e9;
  for (auto& c : cores_) {
    std::vector<UnitReport> units;
    for (int u = 0; u < isa::kNumUnits; ++u) {
      auto unit = static_cast<isa::Unit>(u);
      if (u != 0 && !c->unit(unit)) continue;
      UnitStats& st = c->ctx().stats[u];
      UnitReport ur{std::string(isa::UnitName(unit)), st.BusyTotal(), st.instructions(), 0};
      ur.busy_percent = r.end_fs ? 100.0 * static_cast<double>(ur.busy_fs) / r.end_fs : 0;
      units.push_back(ur);
    }
    r.cores.push_back(std::move(units));
  }
  if (!r.cores.empty()) r.units = r.cores[0];
  return r;
}

}  // namespace tpusim::sim
