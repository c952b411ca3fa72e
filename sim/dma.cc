#include "sim/dma.h"

#include <algorithm>

#include "sim/timing.h"

namespace tpusim::sim {

using isa::Opcode;

DmaEndpoints DmaUnit::Resolve(const Issued& it) {
  // The kernel window moves this core's VMEM endpoints (isa `window`), not global ones.
  auto local = [&](Space src, Space dst) {
    auto moved = [&](Space s, int64_t a) { return s == Space::kVmem ? a + it.vmem_base : a; };
    return DmaEndpoints{ctx_.core, ctx_.core, src, dst, moved(src, it.v[1]), moved(dst, it.v[0])};
  };
  switch (it.instr.op) {
    case Opcode::kDmaHv:
      return local(Space::kHbm, Space::kVmem);
    case Opcode::kDmaVh:
      return local(Space::kVmem, Space::kHbm);
    case Opcode::kDmaVv:
      return local(Space::kVmem, Space::kVmem);
    case Opcode::kDmaHh:
      return local(Space::kHbm, Space::kHbm);
    case Opcode::kDmaHs:
      return local(Space::kHbm, Space::kSmem);
    default:
      break;  // dma.g: global addresses
  }
  auto decode = [&](int64_t a, const char* role, int& core, Space& space, int64_t& off) {
    uint64_t u = static_cast<uint64_t>(a);
    core = AddrCore(u), off = static_cast<int64_t>(AddrOffset(u));
    int s = static_cast<int>((u >> kOffsetBits) & 0xff);
    if (s >= kNumGlobalSpaces || !ctx_.Peer(core))
      ctx_.Fail(it, std::string(role) + " global address names core " + std::to_string(core) +
                        ", space " + std::to_string(s) + ", which this board does not have");
    space = static_cast<Space>(s);
  };
  DmaEndpoints e{};
  decode(it.v[1], "source", e.src_core, e.src_space, e.src);
  decode(it.v[0], "destination", e.dst_core, e.dst_space, e.dst);
  return e;
}

DmaUnit::DmaUnit(sc_core::sc_module_name name, CoreContext& ctx, int stream, DmaUnit* engines_of)
    : Unit(name, ctx, isa::Unit::kDma, stream), pool_(engines_of ? engines_of : this) {
  if (engines_of) return;
  for (int i = 0; i < ctx.cfg->dma_engines; ++i)
    engines_.push_back(std::make_unique<DmaEngine>(("engine" + std::to_string(i)).c_str(), *this));
}

// Every byte the descriptor touches must lie inside the memory: checked at issue, so a
// bad copy stops the run before any of it moves.
void DmaUnit::CheckRange(const Issued& it, int core, Space space, int64_t base, bool is_src) {
  const isa::DmaDesc& d = ctx_.program->descs[it.instr.a[2]];
  int64_t stride = is_src ? d.src_stride : d.dst_stride;
  int64_t pstride = is_src ? d.src_plane_stride : d.dst_plane_stride;
  int64_t lo = base, hi = base;
  for (int64_t corner : {int64_t{0}, stride * (int64_t(d.rows) - 1)}) {
    for (int64_t pc : {int64_t{0}, pstride * (int64_t(d.planes) - 1)}) {
      lo = std::min(lo, base + corner + pc);
      hi = std::max(hi, base + corner + pc + int64_t(d.row_bytes));
    }
  }
  CoreContext& owner = *ctx_.Peer(core);
  const Memory& mem = space == Space::kHbm    ? static_cast<const Memory&>(*owner.hbm)
                      : space == Space::kVmem ? static_cast<const Memory&>(*owner.vmem)
                                              : static_cast<const Memory&>(*owner.smem);
  const char* role = is_src ? "source" : "destination";
  if (lo < 0 || uint64_t(hi) > mem.size())
    ctx_.Fail(it, std::string(role) + " " + SpaceName(space) + " range [" + std::to_string(lo) +
                      ", " + std::to_string(hi) + ") is outside " + SpaceName(space) + " (" +
                      std::to_string(mem.size()) + " bytes)");
  if (base % 4 || stride % 4 || pstride % 4 || d.row_bytes % 4)
    ctx_.Fail(it, std::string(role) + " address " + std::to_string(base) + " or descriptor '" +
                      d.name + "' is not 4-byte aligned");
}

TimeFs DmaUnit::Execute(const Issued& it, TimeFs earliest) {
  DmaEndpoints e = Resolve(it);
  CheckRange(it, e.src_core, e.src_space, e.src, /*is_src=*/true);
  CheckRange(it, e.dst_core, e.dst_space, e.dst, /*is_src=*/false);
  WaitUntil(earliest);
  for (;;) {
    for (auto& e : pool_->engines_) {
      if (e->busy()) continue;
      e->Start(it, copies_.Start(), *this);
      return ctx_.Now();
    }
    pool_->engine_free_.Wait();
  }
}

void DmaUnit::EngineDone(uint64_t seq, TimeFs end) {
  ExtendDrain(end);
  copies_.Finish(seq);
  pool_->engine_free_.Notify();
  WorkFinished();
}

}  // namespace tpusim::sim
