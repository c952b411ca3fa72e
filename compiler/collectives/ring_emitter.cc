#include "compiler/collectives/ring_emitter.h"

namespace tpusim::collectives {
namespace {
constexpr uint64_t kVmemSpace = 1;  // global address space of VMEM (sim/address_map.h)
}

RingEmitter::RingEmitter(std::ostringstream& out, const std::vector<int>& ring, int position,
                         uint64_t chunk_bytes)
    : s_(out), ring_(ring), n_(static_cast<int>(ring.size())), p_(position), c_(chunk_bytes) {}

void RingEmitter::EmitRingRegisters() {
  s_ << "    li r21, " << kVmemSpace << "\n    shli r21, r21, 48\n"
     << "    li r20, " << ring_[Chunk(p_ + 1)] << "\n    shli r20, r20, 56\n    or r20, r20, r21\n"
     << "    li r22, " << ring_[p_] << "\n    shli r22, r22, 56\n    or r22, r22, r21\n"
     << "    li r29, 0\n";
}

void RingEmitter::Vmem(int r, uint64_t off, const char* global) {
  s_ << "    li r" << r << ", " << off << "\n    add r" << r << ", r" << r << ", r29\n";
  if (global) s_ << "    or r" << r << ", r" << r << ", " << global << "\n";
}

void RingEmitter::ReduceScatter(uint64_t data, uint64_t slots, int64_t shift, ReduceOp op) {
  const char* reduce = op == ReduceOp::kSum ? "vadd" : "vmax";
  for (int64_t st = 0; st < n_ - 1; ++st) {
    uint64_t send = Chunk(p_ + shift - st), fold = Chunk(p_ + shift - 1 - st);
    if (st > 0) s_ << "    wait dma, f" << kFlagAdded << ", 1\n";
    Vmem(3, data + send * c_, "r22");
    Vmem(4, slots + st * c_, "r20");
    s_ << "    dma.g r4, r3, chunk, f" << kFlagReceived << "\n"
       << "    wait vpu, f" << kFlagReceived << ", 1\n";
    Vmem(5, slots + st * c_);
    Vmem(6, data + fold * c_);
    Vmem(7, data + (fold + 1) * c_);
    s_ << "add" << st << ":\n"
       << "    vld v0, r5\n    vld v1, r6\n    " << reduce << " v1, v1, v0\n    vst v1, r6\n"
       << "    addi r5, r5, 4096\n    addi r6, r6, 4096\n    blt r6, r7, add" << st << "\n"
       << "    signal vpu, f" << kFlagAdded << ", 1\n";
  }
}

void RingEmitter::AllGather(uint64_t data, uint64_t out, uint64_t mine, int wait_first) {
  if (wait_first >= 0) s_ << "    wait dma, f" << wait_first << ", 1\n";
  Vmem(3, data + mine * c_);
  Vmem(4, out + mine * c_);
  s_ << "    dma.vv r4, r3, chunk, f" << kFlagLocalCopy << "\n";
  for (int64_t st = 0; st < n_ - 1; ++st) {
    uint64_t k = Chunk(static_cast<int64_t>(mine) - st);
    if (st > 0) s_ << "    wait dma, f" << kFlagGathered << ", 1\n";
    Vmem(3, st == 0 ? data + k * c_ : out + k * c_, "r22");
    Vmem(4, out + k * c_, "r20");
    s_ << "    dma.g r4, r3, chunk, f" << kFlagGathered << "\n";
  }
  s_ << "    wait dma, f" << kFlagGathered << ", 1\n    wait dma, f" << kFlagLocalCopy << ", 1\n";
}

}  // namespace tpusim::collectives
