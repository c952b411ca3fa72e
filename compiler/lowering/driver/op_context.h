// What an emitter (emitters.h) knows while it lowers one HLO instruction: where values live,
// the core's MXUs, the board's cores and ring, and the module's devices. Built once per
// module by the Lowerer (lowerer.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/collectives/ring_emitter.h"
#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/lower.h"

namespace tpusim::lowering {

struct OpContext {
  std::function<uint64_t(const hlo::HloInstruction*)> address;  // HBM buffer of a value
  int cores = 1;
  int mxus = 2;
  uint64_t rng_seed = 0;  // LowerOptions::rng_seed
  // Collectives and device ids: every core in torus ring order, the entry handshake's word
  // (CollectiveMailbox), whether each core runs a device of its own (replica_count x
  // num_partitions = cores; else every core runs the whole module) and the module's
  // num_partitions.
  std::vector<int> ring;
  std::optional<collectives::Mailbox> mailbox;
  bool per_device = false;
  int64_t partitions = 1;
  // Collectives run on the collective stream (docs/isa.md), which has no MXU: their drain
  // barriers between rounds signal the DMA and VPU queues only.
  bool collective_stream = false;
  // The VMEM a compute kernel may plan for, from offset 0: less than the core's while an
  // asynchronous all-reduce holds the top (the kernel reports what it kept to in
  // LoweredOp::vmem_bytes; a family that cannot plan for less ignores it).
  int64_t vmem_limit = static_cast<int64_t>(collectives::kCoreVmemBytes);
};

// An array of 32-bit words the VPU holds as they are: f32, s32 or u32.
bool IsWord32(const hlo::Shape& s);

// Bytes of one element of `s` (a tuple: of its first leaf), at least 1.
int ElemBytes(const hlo::Shape& s);

// Elements of `s` (a tuple: all leaves).
int64_t Elements(const hlo::Shape& s);

// Bytes of a value of `shape` (a tuple: all leaves).
uint64_t ByteSize(const hlo::Shape& shape);

}  // namespace tpusim::lowering
