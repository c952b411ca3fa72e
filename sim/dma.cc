#include "sim/dma.h"

#include <algorithm>

#include "sim/timing.h"

namespace tpusim::sim {

using isa::Opcode;

DmaUnit::Endpoints DmaUnit::Resolve(const Issued& it) {
  auto local = [&](Space src, Space dst) {
    return Endpoints{ctx_.core, ctx_.core, src, dst, it.v[1], it.v[0]};
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
  Endpoints e{};
  decode(it.v[1], "source", e.src_core, e.src_space, e.src);
  decode(it.v[0], "destination", e.dst_core, e.dst_space, e.dst);
  return e;
}

DmaUnit::DmaUnit(sc_core::sc_module_name name, CoreContext& ctx)
    : Unit(name, ctx, isa::Unit::kDma) {
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
  Endpoints e = Resolve(it);
  CheckRange(it, e.src_core, e.src_space, e.src, /*is_src=*/true);
  CheckRange(it, e.dst_core, e.dst_space, e.dst, /*is_src=*/false);
  WaitUntil(earliest);
  for (;;) {
    for (auto& e : engines_) {
      if (e->busy()) continue;
      e->Start(it, copies_.Start());
      return ctx_.Now();
    }
    wait(engine_free_);
  }
}

DmaEngine::DmaEngine(sc_core::sc_module_name name, DmaUnit& unit)
    : sc_module(name), socket("socket"), unit_(unit) {
  gp_.set_extension(&latency_);
  SC_THREAD(Run);
}

DmaEngine::~DmaEngine() { gp_.clear_extension(&latency_); }  // the payload must not free it

void DmaEngine::Start(const Issued& it, uint64_t seq) {
  busy_ = true;
  job_ = it;
  seq_ = seq;
  start_.notify(sc_core::SC_ZERO_TIME);
}

void DmaEngine::Run() {
  try {
    for (;;) {
      wait(start_);
      Copy(job_);
    }
  } catch (const SimAbort&) {
  }
}

DmaEngine::Moved DmaEngine::Transfer(const Issued& it, uint64_t src, uint64_t dst, uint64_t n,
                                     TimeFs arrive) {
  CoreContext& ctx = unit_.ctx();
  if (ctx.functional && buffer_.size() < n) buffer_.resize(n);
  TimeFs now = ctx.Now();
  Moved m{now, now};
  for (bool read : {true, false}) {
    tlm::tlm_generic_payload& gp = gp_;
    latency_.fs = 0;
    gp.set_command(read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    gp.set_address(read ? src : dst);
    gp.set_data_ptr(ctx.functional ? buffer_.data() : nullptr);
    gp.set_data_length(static_cast<unsigned>(n));
    gp.set_streaming_width(static_cast<unsigned>(n));
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::sc_time::from_value(arrive - now);
    socket->b_transport(gp, delay);
    if (gp.get_response_status() != tlm::TLM_OK_RESPONSE)
      ctx.Fail(it, "address error at " + std::string(SpaceName(AddrSpace(gp.get_address()))) +
                       " offset " + std::to_string(AddrOffset(gp.get_address())));
    m.done = std::max<TimeFs>(m.done, now + delay.value());
    m.left = std::max<TimeFs>(m.left, now + delay.value() - latency_.fs);
  }
  return m;
}

// Walks the descriptor plane by plane, row by row, in pieces no larger than a chunk;
// waits once per chunk for the latest piece of that chunk to finish. With values, each
// piece is its own transaction; timing-only runs send one transaction per chunk (same
// bytes on the same path, so the same time) to keep the host cost per chunk, not per row.
void DmaEngine::Copy(const Issued& it) {
  CoreContext& ctx = unit_.ctx();
  const isa::DmaDesc& d = ctx.program->descs[it.instr.a[2]];
  const DmaUnit::Endpoints e = unit_.Resolve(it);
  TimeFs start = ctx.Now();
  TimeFs arrive = start + ctx.Cycles(ctx.cfg->dma_latency_cycles);
  uint64_t chunk = ctx.cfg->dma_chunk_bytes, in_chunk = 0;
  TimeFs chunk_left = arrive, all_done = arrive;  // this chunk has left; everything arrived
  int64_t chunk_src = -1, chunk_dst = -1;
  auto move = [&](int64_t s, int64_t t, uint64_t n) {
    Moved m = Transfer(it, GlobalAddr(e.src_core, e.src_space, s),
                       GlobalAddr(e.dst_core, e.dst_space, t), n, std::max(arrive, ctx.Now()));
    chunk_left = std::max(chunk_left, m.left);
    all_done = std::max(all_done, m.done);
  };
  auto finish_chunk = [&] {  // the next chunk starts once this one has left
    if (!ctx.functional && in_chunk > 0) move(chunk_src, chunk_dst, in_chunk);
    if (chunk_left > ctx.Now()) wait(sc_core::sc_time::from_value(chunk_left - ctx.Now()));
    in_chunk = 0;
  };
  if (!ctx.functional) {
    // Timing only: one transaction per chunk, found arithmetically (no walk over rows).
    const uint64_t total = d.bytes();
    for (uint64_t idx = 0; idx < total; idx += chunk) {
      uint64_t row = idx / d.row_bytes, b = idx % d.row_bytes;
      int64_t p = static_cast<int64_t>(row / d.rows), r = static_cast<int64_t>(row % d.rows);
      chunk_src = e.src + p * d.src_plane_stride + r * d.src_stride + static_cast<int64_t>(b);
      chunk_dst = e.dst + p * d.dst_plane_stride + r * d.dst_stride + static_cast<int64_t>(b);
      in_chunk = std::min(chunk, total - idx);
      finish_chunk();
    }
  }
  for (uint32_t p = 0; ctx.functional && p < d.planes; ++p) {
    for (uint32_t r = 0; r < d.rows; ++r) {
      int64_t s = e.src + p * d.src_plane_stride + r * d.src_stride;
      int64_t t = e.dst + p * d.dst_plane_stride + r * d.dst_stride;
      for (uint64_t b = 0; b < d.row_bytes;) {
        uint64_t n = std::min<uint64_t>(d.row_bytes - b, chunk - in_chunk);
        move(s + b, t + b, n);
        b += n, in_chunk += n;
        if (in_chunk == chunk) finish_chunk();
      }
    }
  }
  finish_chunk();
  if (all_done > ctx.Now()) wait(sc_core::sc_time::from_value(all_done - ctx.Now()));
  TimeFs end = ctx.Now();
  uint64_t hbm_bytes = d.bytes() * ((e.src_space == Space::kHbm && e.src_core == ctx.core) +
                                    (e.dst_space == Space::kHbm && e.dst_core == ctx.core));
  ctx.Record(isa::Unit::kDma, it, start, end, 0, hbm_bytes);
  ctx.Peer(e.dst_core)->flags.Add(it.instr.a[3], 1);  // the receiver learns of the data
  busy_ = false;
  unit_.EngineDone(seq_, end);
}

void DmaUnit::EngineDone(uint64_t seq, TimeFs end) {
  ExtendDrain(end);
  copies_.Finish(seq);
  engine_free_.notify(sc_core::SC_ZERO_TIME);
  WorkFinished();
}

}  // namespace tpusim::sim
