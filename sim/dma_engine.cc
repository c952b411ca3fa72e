#include "sim/dma_engine.h"

#include <algorithm>

#include "sim/dma.h"

namespace tpusim::sim {

DmaEngine::DmaEngine(sc_core::sc_module_name name, DmaUnit& unit)
    : sc_module(name), socket("socket"), unit_(unit) {
  gp_.set_extension(&latency_);
  SC_METHOD(Step);
  dont_initialize();
  sensitive << start_;
}

DmaEngine::~DmaEngine() { gp_.clear_extension(&latency_); }  // the payload must not free it

void DmaEngine::Start(const Issued& it, uint64_t seq, DmaUnit& issuer) {
  busy_ = true;
  job_ = Job{};
  job_.it = it;
  job_.seq = seq;
  job_.issuer = &issuer;
  start_.notify(sc_core::SC_ZERO_TIME);
}

// Each activation sends chunks until one has yet to leave (then it resumes at that time)
// or all are sent (then at the time the last byte arrives, to finish).
void DmaEngine::Step() {
  try {
    CoreContext& ctx = unit_.ctx();
    if (!job_.desc) Begin();
    if (!job_.finishing) {
      const uint64_t total = job_.desc->bytes();
      while (job_.moved < total) {
        if (!SendChunk()) break;
        if (job_.chunk_left > ctx.Now()) {
          next_trigger(sc_core::sc_time::from_value(job_.chunk_left - ctx.Now()));
          return;
        }
      }
      job_.finishing = true;
      if (job_.all_done > ctx.Now()) {
        next_trigger(sc_core::sc_time::from_value(job_.all_done - ctx.Now()));
        return;
      }
    }
    Finish();
  } catch (const SimAbort&) {
    // The run is stopping; ctx.error says why.
  }
}

void DmaEngine::Begin() {
  CoreContext& ctx = unit_.ctx();
  job_.desc = &ctx.program->descs[job_.it.instr.a[2]];
  job_.ends = unit_.Resolve(job_.it);
  job_.start = ctx.Now();
  job_.arrive = job_.start + ctx.Cycles(ctx.cfg->dma_latency_cycles);
  job_.chunk_left = job_.all_done = job_.arrive;
  const DmaEndpoints& e = job_.ends;
  if (!ctx.functional && e.src_core == ctx.core && e.dst_core == ctx.core) {
    job_.direct_src = unit_.LocalChannel(e.src_space);
    job_.direct_dst = unit_.LocalChannel(e.dst_space);
  }
}

void DmaEngine::Move(int64_t src, int64_t dst, uint64_t n) {
  CoreContext& ctx = unit_.ctx();
  const DmaEndpoints& e = job_.ends;
  if (ctx.functional && buffer_.size() < n) buffer_.resize(n);
  const TimeFs now = ctx.Now();
  const TimeFs arrive = std::max(job_.arrive, now);
  if (job_.direct_src) {  // no path latency within the core
    const TimeFs done = std::max(job_.direct_src->Reserve(now, arrive, n),
                                 job_.direct_dst->Reserve(now, arrive, n));
    job_.all_done = std::max(job_.all_done, done);
    job_.chunk_left = std::max(job_.chunk_left, done);
    return;
  }
  for (bool read : {true, false}) {
    tlm::tlm_generic_payload& gp = gp_;
    latency_.fs = 0;
    gp.set_command(read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    gp.set_address(read ? GlobalAddr(e.src_core, e.src_space, src)
                        : GlobalAddr(e.dst_core, e.dst_space, dst));
    gp.set_data_ptr(ctx.functional ? buffer_.data() : nullptr);
    gp.set_data_length(static_cast<unsigned>(n));
    gp.set_streaming_width(static_cast<unsigned>(n));
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::sc_time::from_value(arrive - now);
    socket->b_transport(gp, delay);
    if (gp.get_response_status() != tlm::TLM_OK_RESPONSE)
      ctx.Fail(job_.it, "address error at " + std::string(SpaceName(AddrSpace(gp.get_address()))) +
                            " offset " + std::to_string(AddrOffset(gp.get_address())));
    job_.all_done = std::max<TimeFs>(job_.all_done, now + delay.value());
    job_.chunk_left = std::max<TimeFs>(job_.chunk_left, now + delay.value() - latency_.fs);
  }
}

// With values, each piece of a row is its own transaction; timing-only runs send one
// transaction per chunk (same bytes on the same path, so the same time), found
// arithmetically, to keep the host cost per chunk, not per row.
bool DmaEngine::SendChunk() {
  CoreContext& ctx = unit_.ctx();
  const isa::DmaDesc& d = *job_.desc;
  const DmaEndpoints& e = job_.ends;
  const uint64_t chunk = ctx.cfg->dma_chunk_bytes, total = d.bytes();
  if (!ctx.functional) {
    const uint64_t idx = job_.moved, row = idx / d.row_bytes, b = idx % d.row_bytes;
    const auto p = static_cast<int64_t>(row / d.rows), r = static_cast<int64_t>(row % d.rows);
    const auto off = static_cast<int64_t>(b);
    const uint64_t n = std::min(chunk, total - idx);
    Move(e.src + p * d.src_plane_stride + r * d.src_stride + off,
         e.dst + p * d.dst_plane_stride + r * d.dst_stride + off, n);
    job_.moved += n;
    return job_.moved < total;
  }
  for (uint64_t in_chunk = 0; in_chunk < chunk && job_.moved < total;) {
    const int64_t p = job_.plane, r = job_.row, b = static_cast<int64_t>(job_.byte);
    const uint64_t n = std::min<uint64_t>(d.row_bytes - job_.byte, chunk - in_chunk);
    Move(e.src + p * d.src_plane_stride + r * d.src_stride + b,
         e.dst + p * d.dst_plane_stride + r * d.dst_stride + b, n);
    job_.byte += n, job_.moved += n, in_chunk += n;
    if (job_.byte == d.row_bytes) {
      job_.byte = 0;
      if (++job_.row == d.rows) job_.row = 0, ++job_.plane;
    }
  }
  return job_.moved < total;
}

void DmaEngine::Finish() {
  CoreContext& ctx = unit_.ctx();
  const isa::DmaDesc& d = *job_.desc;
  const DmaEndpoints& e = job_.ends;
  const TimeFs end = ctx.Now();
  const uint64_t hbm_bytes = d.bytes() * ((e.src_space == Space::kHbm && e.src_core == ctx.core) +
                                          (e.dst_space == Space::kHbm && e.dst_core == ctx.core));
  ctx.Record(isa::Unit::kDma, job_.it, job_.start, end, 0, hbm_bytes);
  // The receiver learns of the data, on the issuing stream's flag.
  ctx.Peer(e.dst_core)->Flags(job_.issuer->stream()).Add(job_.it.Flag(job_.it.instr.a[3]), 1);
  busy_ = false;
  job_.desc = nullptr;
  job_.issuer->EngineDone(job_.seq, end);
}

}  // namespace tpusim::sim
