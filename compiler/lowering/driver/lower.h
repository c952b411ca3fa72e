// Lowering of an optimized HLO module onto the ISA: one program per core of the board.
// Every instruction of the entry computation becomes a kernel (MXU matmul, VPU stream,
// DMA copy or ring collective; docs/compiler.md), kernels run one after another separated
// by a drain barrier, while loops become counted ISA loops whose state lives in the while's
// buffers, and values inside loops, calls and branches get buffers of their own above the
// memory plan (control_flow.cc, value_buffers.h). The module is one device's program: a
// module of replica_count x num_partitions = cores devices runs device k on core k; a
// single-replica module runs whole on every core. Data parallelism is decided before the
// lowering: the batch-sharding pass and the SPMD partitioner (docs/spmd.md) turn a
// single-replica step into a per-device program with its all-reduces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/collectives/ring_estimates.h"
#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"
#include "compiler/passes/memory.h"

namespace tpusim::lowering {

struct LowerOptions {
  int cores = 8;
  int mxus_per_core = 2;
  std::vector<int> ring;  // every core in torus ring order (collectives::TorusRing)
  bool infeed = true;     // each step first waits for its input batch (sim/host.h)
  // HBM per core (sim::CoreConfig hbm_bytes); its last kMailboxBytes hold the collectives'
  // entry-handshake word (CollectiveMailbox). 0: collectives skip the handshake.
  uint64_t hbm_bytes = 0;
  uint64_t rng_seed = 0;  // rng keys: equal to the evaluator's EvalOptions::rng_seed
  // The board's figures (sim/configs) that time a window beside an asynchronous all-reduce
  // (lowerer.h): a kernel as its roofline, the all-reduce as its ring. 0: the window stays
  // open until the done.
  double peak_flops_per_s = 0;  // per core
  double hbm_bytes_per_s = 0;   // per core
  double link_bytes_per_s = 0;  // one ICI link, one direction
  double hop_seconds = 0;       // a ring step's start-up: DMA latency and one hop's
  // Independent entry kernels overlap across the drain barrier (lowerer.h, "Kernel
  // windows"); false: every kernel drains before the next one issues.
  bool kernel_windows = true;
};

// Kernel windows (LowerOptions::kernel_windows) start on this boundary of VMEM.
inline constexpr int64_t kWindowAlign = int64_t{64} << 10;

// The ring estimates' view of the board `o` lowers for (collectives/ring_estimates.h): the
// scheduler's (CompileOptions::ring_costs) and the lowering's.
collectives::RingCostModel RingCostsOf(const LowerOptions& o);

// The top of HBM that memory planning leaves to the collectives' entry handshake.
inline constexpr uint64_t kMailboxBytes = 4096;
inline std::optional<uint64_t> CollectiveMailbox(const LowerOptions& o) {
  if (o.hbm_bytes < kMailboxBytes) return std::nullopt;
  return o.hbm_bytes - kMailboxBytes;
}

enum class KernelKind { kNone, kMxu, kVpu, kDma, kCollective };

struct LoweredOp {
  std::string name, opcode;
  KernelKind kind = KernelKind::kNone;
  double flops = 0;  // useful FLOPs per core per execution, as the kernel counts them
  // FLOPs of the HLO op as XLA's cost analysis counts them (analysis/cost_analysis.h),
  // per core per execution: the model's work, padding not included.
  double model_flops = 0;
  uint64_t hbm_bytes = 0;  // bytes the kernel moves through HBM per core
  int64_t executions = 1;  // trip count of the loops around it
  bool exact = false;      // the kernel computes the op's values (not only its timing)
  // The most VMEM the kernel uses, from offset 0 (OpContext::vmem_limit); -1: unknown, all
  // of it. A kernel runs beside an asynchronous all-reduce only below the collective
  // stream's region (collectives::kAsyncRingVmemBase).
  int64_t vmem_bytes = -1;
  // An all-reduce-start: where its buffers start in VMEM (the kernels beside it keep below);
  // -1 for every other op.
  int64_t collective_vmem_base = -1;
  std::string note;  // padding, approximations
  // What the framework called the op (metadata op_name, "jit(step)/Dense_0/dot_general")
  // and the Python source that made it ("train.py:17"); "" when the HLO does not say.
  std::string framework_op, source;
};

struct OutputBuffer {  // one leaf of the entry's result
  std::string name;
  uint64_t address = 0;  // HBM, on every core
};

struct LoweredModule {
  std::vector<std::string> programs;  // assembly, one per core
  // Its collectives run on each core's collective stream (an async all-reduce in the module).
  bool collective_stream = false;
  std::vector<LoweredOp> ops;
  int replicas = 1;              // devices: the module's replica_count x num_partitions
  int partitions = 1;            // num_partitions: SPMD programs, one per device
  bool data_parallel = false;    // a single-replica step the batch-sharding pass split
  std::string not_split_reason;  // single-replica module run whole on every core: why
  int64_t global_batch = 0, batch_per_core = 0;
  std::vector<std::string> batch_parameters;  // the inputs the host feeds each step
  uint64_t example_bytes = 0;                 // bytes per example of those inputs
  // MXU rows each example feeds a layer: its positions, the input's dimensions after the batch
  // (token ids: an embedding gives each its row; pixels: a convolution's rows), not a float
  // input's last one (its features): 1 for [batch, features].
  int64_t rows_per_example = 1;
  uint64_t infeed_address = 0;  // where the step's batch lands in HBM
  std::vector<OutputBuffer> outputs;
  double flops_per_step_per_core = 0;
  double model_flops_per_step_per_core = 0;  // LoweredOp::model_flops x executions, summed
  bool exact = false;                        // every kernel computes values: results can be checked
};

hlo::Result<LoweredModule> LowerModule(const hlo::HloModule& module, const passes::MemoryPlan& plan,
                                       const LowerOptions& options);

}  // namespace tpusim::lowering
