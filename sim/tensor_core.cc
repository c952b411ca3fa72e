#include "sim/tensor_core.h"

namespace tpusim::sim {

TensorCore::TensorCore(sc_core::sc_module_name name, int core, const CoreConfig& cfg,
                       const isa::Program& program, bool functional, IActivitySink* sink,
                       std::string* error)
    : sc_module(name), hbm_(cfg.hbm_bytes), vmem_(cfg.vmem_bytes), smem_(cfg.smem_bytes) {
  ctx_.core = core;
  ctx_.cfg = &cfg;
  ctx_.program = &program;
  ctx_.functional = functional;
  ctx_.vmem = &vmem_;
  ctx_.smem = &smem_;
  ctx_.hbm = &hbm_;
  ctx_.sink = sink;
  ctx_.error = error;

  hbm_port_ = std::make_unique<MemoryPort>("hbm", hbm_, cfg.hbm_bandwidth_bytes_per_s, functional);
  vmem_port_ =
      std::make_unique<MemoryPort>("vmem", vmem_, cfg.vmem_dma_bandwidth_bytes_per_s, functional);
  // SMEM copies are a few words (gather indices): they pay the DMA latency and move at the
  // VMEM DMA bandwidth (no separate figure is published).
  smem_port_ =
      std::make_unique<MemoryPort>("smem", smem_, cfg.vmem_dma_bandwidth_bytes_per_s, functional);
  router_ = std::make_unique<Router>("router");
  dma_ = std::make_unique<DmaUnit>("dma", ctx_);
  for (int i = 0; i < cfg.mxus; ++i)
    mxus_.push_back(std::make_unique<MxuUnit>(("mxu" + std::to_string(i)).c_str(), ctx_, i));
  vpu_ = std::make_unique<VpuUnit>("vpu", ctx_);

  units_[static_cast<int>(isa::Unit::kDma)] = dma_.get();
  for (auto& m : mxus_) units_[static_cast<int>(m->id())] = m.get();
  units_[static_cast<int>(isa::Unit::kVpu)] = vpu_.get();
  sequencer_ = std::make_unique<Sequencer>("sequencer", ctx_, units_);
  if (program.collective_entry) {
    collective_dma_ = std::make_unique<DmaUnit>("collective_dma", ctx_, 1, dma_.get());
    collective_vpu_ = std::make_unique<VpuUnit>("collective_vpu", ctx_, 1);
    collective_units_[static_cast<int>(isa::Unit::kDma)] = collective_dma_.get();
    collective_units_[static_cast<int>(isa::Unit::kVpu)] = collective_vpu_.get();
    collective_sequencer_ =
        std::make_unique<Sequencer>("collective_sequencer", ctx_, collective_units_, 1);
  }

  // Connect: engines -> router -> this core's memory ports.
  for (auto& e : dma_->engines()) e->socket.bind(router_->in);
  router_->out.bind(hbm_port_->socket);
  router_->AddRoute(core, Space::kHbm, 0);
  router_->out.bind(vmem_port_->socket);
  router_->AddRoute(core, Space::kVmem, 1);
  router_->out.bind(smem_port_->socket);
  router_->AddRoute(core, Space::kSmem, 2);
  dma_->SetLocalChannels(&hbm_port_->channel(), &vmem_port_->channel(), &smem_port_->channel());
}

void TensorCore::SetHosted(int infeed_flag) {
  sequencer_->SetHosted(infeed_flag);
  if (collective_sequencer_) collective_sequencer_->SetHosted(-1);
}

void TensorCore::Launch(uint32_t steps) {
  sequencer_->Launch(steps);
  if (collective_sequencer_) collective_sequencer_->Launch(steps);
}

void TensorCore::Close() {
  sequencer_->Close();
  if (collective_sequencer_) collective_sequencer_->Close();
}

bool TensorCore::finished() const {
  return sequencer_->finished() && (!collective_sequencer_ || collective_sequencer_->finished());
}

std::vector<std::string> TensorCore::BlockedUnits() const {
  std::vector<std::string> out;
  const std::string core = "core " + std::to_string(ctx_.core) + " ";
  auto report = [&](const Sequencer* seq, const std::array<Unit*, isa::kNumUnits>& units,
                    const std::string& prefix) {
    if (!seq->finished() && !seq->blocked_on().empty())
      out.push_back(prefix + "seq waits for " + seq->blocked_on());
    for (Unit* u : units) {
      if (!u || u->blocked_flag() < 0) continue;
      const int f = u->blocked_flag();
      out.push_back(prefix + std::string(isa::UnitName(u->id())) + " waits for flag " +
                    FlagName(f) + " >= " + std::to_string(u->blocked_need()) + " (it is " +
                    std::to_string(u->flags().value(f)) + ")");
    }
  };
  report(sequencer_.get(), units_, core);
  if (collective_sequencer_)
    report(collective_sequencer_.get(), collective_units_, core + "collective stream ");
  return out;
}

}  // namespace tpusim::sim
