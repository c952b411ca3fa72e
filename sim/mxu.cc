#include "sim/mxu.h"

#include <algorithm>

#include "isa/bf16.h"
#include "sim/timing.h"
#include "sim/vpu.h"

namespace tpusim::sim {

using isa::Opcode;

namespace {
constexpr int kAccBlock = 8;

// acc[n] (+)= sum_k x[k] * w[k][n] for one LHS row; vectorised per target at run time.
__attribute__((target_clones("avx2", "default"))) void MacRow(const float* x, const float* w,
                                                              float* acc) {
  for (int k = 0; k < kTile; ++k) {
    float xk = x[k];
    if (xk == 0.0f) continue;
    const float* wk = w + k * kTile;
    for (int n = 0; n < kTile; ++n) acc[n] += xk * wk[n];
  }
}
}  // namespace

MxuUnit::MxuUnit(sc_core::sc_module_name name, CoreContext& ctx, int index)
    : Unit(name, ctx, static_cast<isa::Unit>(static_cast<int>(isa::Unit::kMxu0) + index)),
      acc_ready_(ctx.cfg->mxu_result_buffer_rows / kAccBlock + 1, 0),
      acc_free_(acc_ready_.size(), 0) {
  if (ctx.functional) {
    staged_.assign(kTile * kTile, 0.f);
    active_.assign(kTile * kTile, 0.f);
    acc_.assign(static_cast<size_t>(ctx.cfg->mxu_result_buffer_rows) * kTile, 0.f);
  }
}

TimeFs MxuUnit::Execute(const Issued& it, TimeFs earliest) {
  switch (it.instr.op) {
    case Opcode::kMxuLdw:
    case Opcode::kMxuLdwt:
      return LoadWeights(it, earliest);
    case Opcode::kMxuMm:
    case Opcode::kMxuMma:
      return Matmul(it, earliest);
    case Opcode::kMxuPop:
      return Pop(it, earliest);
    default:
      ctx_.Fail(it, "not an MXU instruction");
  }
}

uint64_t MxuUnit::CheckedVmem(const Issued& it, int64_t addr, uint64_t bytes) {
  addr += it.vmem_base;
  if (addr < 0 || !ctx_.vmem->Contains(static_cast<uint64_t>(addr), bytes))
    ctx_.Fail(it, "VMEM range [" + std::to_string(addr) + ", +" + std::to_string(bytes) +
                      ") is outside VMEM");
  if (addr % kVmemAlign)
    ctx_.Fail(it, "VMEM address " + std::to_string(addr) + " is not " + std::to_string(kVmemAlign) +
                      "-byte aligned");
  return static_cast<uint64_t>(addr);
}

void MxuUnit::CheckAccRows(const Issued& it, int64_t first, int64_t rows) {
  if (rows < 1 || first < 0 || first + rows > ctx_.cfg->mxu_result_buffer_rows)
    ctx_.Fail(it, "accumulator rows [" + std::to_string(first) + ", " +
                      std::to_string(first + rows) + ") outside the result buffer of " +
                      std::to_string(ctx_.cfg->mxu_result_buffer_rows) + " rows");
}

TimeFs MxuUnit::LoadWeights(const Issued& it, TimeFs earliest) {
  uint64_t addr = CheckedVmem(it, it.v[1], kTile * kTile * 2);
  TimeFs start = std::max({earliest, weight_path_free_, staging_free_});
  TimeFs end = start + ctx_.Cycles(WeightLoadCycles(*ctx_.cfg));
  weight_path_free_ = staged_ready_ = end;
  has_staged_ = true;
  ExtendDrain(end);
  if (ctx_.functional) {
    std::vector<uint16_t> raw(kTile * kTile);
    ctx_.vmem->Read(addr, raw.data(), raw.size() * 2);
    bool transpose = it.instr.op == Opcode::kMxuLdwt;
    for (int r = 0; r < kTile; ++r)
      for (int c = 0; c < kTile; ++c)
        staged_[transpose ? c * kTile + r : r * kTile + c] = isa::Bf16ToF32(raw[r * kTile + c]);
  }
  ctx_.Record(id_, it, start, end, 0, 0, /*counts_as_busy=*/false);
  return start;
}

TimeFs MxuUnit::Matmul(const Issued& it, TimeFs earliest) {
  int64_t rows = it.v[2], acc_row = it.v[3];
  CheckAccRows(it, acc_row, rows);
  uint64_t lhs = CheckedVmem(it, it.v[1], static_cast<uint64_t>(rows) * kTile * 2);
  bool latch = has_staged_;
  if (!latch && !has_active_) ctx_.Fail(it, "matmul before any weights were loaded (mxu.ldw)");
  TimeFs start = std::max({earliest, stream_free_, latch ? staged_ready_ : 0});
  // Results must not overwrite accumulator rows a pending pop has yet to read (pops run in
  // order, so none is pending once the last one has finished).
  const int64_t first_block = acc_row / kAccBlock, last_block = (acc_row + rows - 1) / kAccBlock;
  if (start < pop_free_)
    for (int64_t b = first_block; b <= last_block; ++b) start = std::max(start, acc_free_[b]);
  TimeFs end = start + ctx_.Cycles(MatmulStreamCycles(rows));
  TimeFs ready = start + ctx_.Cycles(MatmulLatencyCycles(*ctx_.cfg, rows));
  if (latch) {
    std::swap(staged_, active_);
    has_staged_ = false, has_active_ = true;
    staging_free_ = start;  // the previously active buffer is free for the next load
  }
  stream_free_ = end;
  // Matmuls stream in order and each ends after the previous one: `ready` only grows.
  std::fill(acc_ready_.begin() + first_block, acc_ready_.begin() + last_block + 1, ready);
  ExtendDrain(end);
  if (ctx_.functional) {
    bool accumulate = it.instr.op == Opcode::kMxuMma;
    std::vector<uint16_t> raw(static_cast<size_t>(rows) * kTile);
    ctx_.vmem->Read(lhs, raw.data(), raw.size() * 2);
    float x[kTile];
    for (int64_t i = 0; i < rows; ++i) {
      for (int k = 0; k < kTile; ++k) x[k] = isa::Bf16ToF32(raw[i * kTile + k]);
      float* acc = &acc_[(acc_row + i) * kTile];
      if (!accumulate) std::fill_n(acc, kTile, 0.f);
      MacRow(x, active_.data(), acc);
    }
  }
  ctx_.Record(id_, it, start, end, 2.0 * rows * kTile * kTile, 0);
  return start;
}

TimeFs MxuUnit::Pop(const Issued& it, TimeFs earliest) {
  int64_t acc_row = it.v[2], rows = it.v[3];
  CheckAccRows(it, acc_row, rows);
  uint64_t dst = CheckedVmem(it, it.v[1], static_cast<uint64_t>(rows) * kTile * 4);
  TimeFs start = std::max(earliest, pop_free_);
  for (int64_t b = acc_row / kAccBlock; b <= (acc_row + rows - 1) / kAccBlock; ++b)
    start = std::max(start, acc_ready_[b]);
  TimeFs end = start + ctx_.Cycles(PopCycles(*ctx_.cfg, rows));
  pop_free_ = end;
  for (int64_t b = acc_row / kAccBlock; b <= (acc_row + rows - 1) / kAccBlock; ++b)
    acc_free_[b] = end;
  ExtendDrain(end);
  if (ctx_.functional)
    ctx_.vmem->Write(dst, &acc_[acc_row * kTile], static_cast<uint64_t>(rows) * kTile * 4);
  ctx_.Record(id_, it, start, end, 0, 0, /*counts_as_busy=*/false);
  return earliest;  // pops run on their own path; the queue moves on at once
}

}  // namespace tpusim::sim
