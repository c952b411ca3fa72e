#include "compiler/collectives/ring_emitter.h"

#include <string_view>

#include "compiler/assembly/asm_util.h"

namespace tpusim::collectives {
namespace {
constexpr uint64_t kVmemSpace = 1;  // global address space of VMEM (sim/address_map.h)
}

const char* ReduceOpName(ReduceOp op) {
  return op == ReduceOp::kSum ? "sum" : op == ReduceOp::kMax ? "max" : "or";
}

RingEmitter::RingEmitter(std::ostringstream& out, const std::vector<int>& ring, int position,
                         uint64_t chunk_bytes, RingRegisters regs)
    : s_(out),
      ring_(ring),
      n_(static_cast<int>(ring.size())),
      p_(position),
      c_(chunk_bytes),
      r_(regs) {}

void EmitEntryBarrier(std::ostringstream& s, int self, const Mailbox& mailbox) {
  if (mailbox.cores < 2) return;
  s << ".desc token rows=1 row_bytes=4 src_stride=0 dst_stride=0\n"
    << assembly::LoadAddress(5, mailbox.address, 6)  // r5: the mailbox, HBM space 0
    << "    li r6, " << self << "\n    shli r6, r6, 56\n    or r6, r6, r5\n";
  for (int flag : {kArrivedFlag, kReadyFlag}) {
    for (int peer = 0; peer < mailbox.cores; ++peer) {
      if (peer == self) continue;
      s << "    li r7, " << peer << "\n    shli r7, r7, 56\n    or r7, r7, r5\n"
        << "    dma.g r7, r6, token, f" << flag << "\n";
    }
    s << "    wait seq, f" << flag << ", " << mailbox.cores - 1 << "\n";
  }
}

void EmitEntry(std::ostringstream& s, int self, const Mailbox& mailbox,
               const std::vector<int>& writers, int targets) {
  if (mailbox.barrier) return EmitEntryBarrier(s, self, mailbox);
  if (writers.empty() && targets == 0) return;
  s << ".desc token rows=1 row_bytes=4 src_stride=0 dst_stride=0\n"
    << assembly::LoadAddress(5, mailbox.address, 6) << "    li r6, " << self
    << "\n    shli r6, r6, 56\n    or r6, r6, r5\n";
  for (int w : writers)
    s << "    li r7, " << w << "\n    shli r7, r7, 56\n    or r7, r7, r5\n"
      << "    dma.g r7, r6, token, f" << kReadyFlag << "\n";
  if (targets > 0) s << "    wait seq, f" << kReadyFlag << ", " << targets << "\n";
}

void RingEmitter::EmitRingRegisters() {
  s_ << "    li r21, " << kVmemSpace << "\n    shli r21, r21, 48\n"
     << "    li " << r_.next << ", " << ring_[Chunk(p_ + 1)] << "\n    shli " << r_.next << ", "
     << r_.next << ", 56\n    or " << r_.next << ", " << r_.next << ", r21\n"
     << "    li r22, " << ring_[p_] << "\n    shli r22, r22, 56\n    or r22, r22, r21\n"
     << "    li " << r_.base << ", " << r_.vmem_base << "\n";
}

void RingEmitter::Vmem(int r, uint64_t off, const char* global) {
  s_ << "    li r" << r << ", " << off << "\n    add r" << r << ", r" << r << ", " << r_.base
     << "\n";
  if (global) {
    const char* reg = std::string_view(global) == "next" ? r_.next : "r22";
    s_ << "    or r" << r << ", r" << r << ", " << reg << "\n";
  }
}

void RingEmitter::ReduceScatter(uint64_t data, uint64_t slots, int64_t shift, ReduceOp op) {
  for (int64_t st = 0; st < n_ - 1; ++st) ReduceScatterStep(data, slots, shift, op, st);
}

void RingEmitter::ReduceScatterStep(uint64_t data, uint64_t slots, int64_t shift, ReduceOp op,
                                    int64_t st) {
  ReduceScatterSend(data, slots, shift, st);
  ReduceScatterFold(data, slots, shift, op, st);
}

void RingEmitter::ReduceScatterSend(uint64_t data, uint64_t slots, int64_t shift, int64_t st) {
  uint64_t send = Chunk(p_ + shift - st);
  if (st > 0) s_ << "    wait dma, f" << Flag(kFlagAdded) << ", 1\n";
  Vmem(3, data + send * c_, "self");
  Vmem(4, slots + st * c_, "next");
  s_ << "    dma.g r4, r3, chunk, f" << Flag(kFlagReceived) << "\n";
}

void RingEmitter::ReduceScatterFold(uint64_t data, uint64_t slots, int64_t shift, ReduceOp op,
                                    int64_t st) {
  const char* reduce = op == ReduceOp::kSum ? "vadd" : op == ReduceOp::kMax ? "vmax" : "vor.u32";
  uint64_t fold = Chunk(p_ + shift - 1 - st);
  s_ << "    wait vpu, f" << Flag(kFlagReceived) << ", 1\n";
  Vmem(5, slots + st * c_);
  Vmem(6, data + fold * c_);
  s_ << "    li r7, " << c_ / 4096 << "\n    vloop r7, 4\n"  // one trip per vreg of the chunk
     << "    vlds v0, r5, 4096\n    vlds v1, r6, 4096\n    " << reduce
     << " v1, v1, v0\n    vsts v1, r6, 4096\n"
     << "    signal vpu, f" << Flag(kFlagAdded) << ", 1\n";
}

void RingEmitter::AllGather(uint64_t data, uint64_t out, uint64_t mine, int wait_first) {
  AllGatherBegin(data, out, mine, wait_first);
  for (int64_t st = 0; st < n_ - 1; ++st) AllGatherStep(data, out, mine, st);
  AllGatherEnd();
}

void RingEmitter::AllGatherBegin(uint64_t data, uint64_t out, uint64_t mine, int wait_first) {
  if (wait_first >= 0) s_ << "    wait dma, f" << Flag(wait_first) << ", 1\n";
  Vmem(3, data + mine * c_);
  Vmem(4, out + mine * c_);
  s_ << "    dma.vv r4, r3, chunk, f" << Flag(kFlagLocalCopy) << "\n";
  if (gather_from_out_) s_ << "    wait dma, f" << Flag(kFlagLocalCopy) << ", 1\n";
}

void RingEmitter::AllGatherStep(uint64_t data, uint64_t out, uint64_t mine, int64_t st) {
  uint64_t k = Chunk(static_cast<int64_t>(mine) - st);
  if (st > 0) s_ << "    wait dma, f" << Flag(kFlagGathered) << ", 1\n";
  Vmem(3, st == 0 && !gather_from_out_ ? data + k * c_ : out + k * c_, "self");
  Vmem(4, out + k * c_, "next");
  s_ << "    dma.g r4, r3, chunk, f" << Flag(kFlagGathered) << "\n";
}

void RingEmitter::AllGatherEnd() {
  s_ << "    wait dma, f" << Flag(kFlagGathered) << ", 1\n";
  if (!gather_from_out_) s_ << "    wait dma, f" << Flag(kFlagLocalCopy) << ", 1\n";
}

}  // namespace tpusim::collectives
