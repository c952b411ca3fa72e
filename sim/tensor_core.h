// One TensorCore: sequencer, DMA, MXUs and VPU, with its VMEM, SMEM and HBM behind
// TLM memory ports. Lifecycle: construct (build), Connect(), then the simulation runs.
#pragma once

#include <memory>
#include <vector>

#include "sim/dma.h"
#include "sim/memory_port.h"
#include "sim/mxu.h"
#include "sim/router.h"
#include "sim/sequencer.h"
#include "sim/vpu.h"

namespace tpusim::sim {

class TensorCore : public sc_core::sc_module {
 public:
  TensorCore(sc_core::sc_module_name name, int core, const CoreConfig& cfg,
             const isa::Program& program, bool functional, IActivitySink* sink, std::string* error);

  CoreContext& ctx() { return ctx_; }
  SparseMemory& hbm() { return hbm_; }
  LinearMemory& vmem() { return vmem_; }
  Sequencer& sequencer() { return *sequencer_; }
  // The collective stream's sequencer, or null (isa::Program::collective_entry unset).
  Sequencer* collective_sequencer() { return collective_sequencer_.get(); }
  // Host control of both streams (Sequencer::SetHosted, Launch, Close).
  void SetHosted(int infeed_flag);
  void Launch(uint32_t steps);
  void Close();
  bool finished() const;
  VpuUnit& vpu() { return *vpu_; }
  Unit* unit(isa::Unit u) { return units_[static_cast<int>(u)]; }
  MemoryPort& hbm_port() { return *hbm_port_; }
  MemoryPort& vmem_port() { return *vmem_port_; }
  Router& router() { return *router_; }
  // The router's outputs to this core's memories (HBM 0, VMEM 1, SMEM 2); the board binds
  // the fabric next, at this index.
  static constexpr int kLocalMemoryPorts = 3;
  // Lines describing every blocked unit (for deadlock reports).
  std::vector<std::string> BlockedUnits() const;

 private:
  CoreContext ctx_;
  SparseMemory hbm_;
  LinearMemory vmem_, smem_;
  std::unique_ptr<MemoryPort> hbm_port_, vmem_port_, smem_port_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<DmaUnit> dma_;
  std::vector<std::unique_ptr<MxuUnit>> mxus_;
  std::unique_ptr<VpuUnit> vpu_;
  std::array<Unit*, isa::kNumUnits> units_{};
  std::unique_ptr<Sequencer> sequencer_;
  // The collective stream: its DMA queue (on the engines above) and VPU queue.
  std::unique_ptr<DmaUnit> collective_dma_;
  std::unique_ptr<VpuUnit> collective_vpu_;
  std::array<Unit*, isa::kNumUnits> collective_units_{};
  std::unique_ptr<Sequencer> collective_sequencer_;
};

}  // namespace tpusim::sim
