// The lowering of one module (lower.h), shared by lower.cc (the entry, kernels),
// control_flow.cc (call, conditional) and while_loop.cc. Internal to the lowering.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/hlo/ir.h"
#include "compiler/lowering/buffers/value_buffers.h"
#include "compiler/lowering/buffers/value_copies.h"
#include "compiler/lowering/driver/lower.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The leaves of a result: a tuple's elements, or the array itself.
inline int64_t Leaves(const hlo::Shape& s) {
  return s.IsTuple() ? static_cast<int64_t>(s.tuple_shapes.size()) : 1;
}

// The copies control flow adds, as one op of the lowered module (exact unless a constant
// cannot be filled: Lowerer::CopyOf).
LoweredOp CopyOp(const std::string& name, int64_t executions);

// The collective stream's flags (docs/collectives.md, "The collective stream"): the main
// stream's xsignal on kStartFlag (of the collective stream's bank) starts the next
// collective; the collective stream's on kDoneFlag (of the main stream's bank, which no main
// kernel uses once the collectives have left it) reports one done. kStreamBarrierFlag drains
// the collective stream's queues.
inline constexpr int kStartFlag = 31, kDoneFlag = 16, kStreamBarrierFlag = 30;

// The VMEM a compute kernel may plan for: the core's, or below an asynchronous all-reduce's
// buffers.
inline constexpr int64_t kCoreVmem = static_cast<int64_t>(collectives::kCoreVmemBytes);
inline constexpr int64_t kBesideCollective = static_cast<int64_t>(collectives::kAsyncRingVmemBase);

struct HbmRange {
  uint64_t begin = 0, end = 0;
};

class Lowerer {
 public:
  Lowerer(const hlo::HloModule& m, const passes::MemoryPlan& plan, const LowerOptions& o);
  LoweredModule Run();

 private:
  // A leaf of a computation's result that is not computed in its caller's buffer: copied
  // there after the computation ran.
  struct ResultCopy {
    const hlo::HloInstruction* leaf;
    int64_t leaf_element, element;  // of the leaf's value, of the caller's result
  };

  void SetUpInfeed();
  void WriteConstantResults(const std::vector<const hlo::HloInstruction*>& leaves);
  uint64_t Address(const hlo::HloInstruction* v, int64_t element = 0) {
    return buffers_.Address(v, element);
  }
  // Emit closes the kernel window first (CloseWindow); EmitRaw writes only.
  void Emit(const std::string& s);
  void EmitRaw(const std::string& s);
  void LowerComputation(const hlo::HloComputation& comp, int64_t executions, bool entry);
  void LowerInstruction(const hlo::HloInstruction& i, int64_t executions);
  void LowerControl(const hlo::HloInstruction& i, int64_t executions);
  // A kernel followed by the full drain barrier: the next one issues once it has drained.
  void AppendDrained(const std::vector<std::string>& per_core);

  // Kernel windows (kernel_windows.cc): an entry kernel whose VMEM and HBM are known is
  // issued before the one before it has drained, when they touch disjoint HBM (neither
  // writes what the other reads or writes): in the other flag bank and a VMEM range beside
  // the other's (isa `window`). Its barrier lags: its queues signal at its end, and the
  // sequencer awaits them after issuing the next kernel (or at CloseWindow).
  struct WindowKernel {
    int bank = 0;
    int64_t vmem_begin = 0, vmem_end = 0;  // absolute VMEM
    std::vector<HbmRange> reads, writes;
  };
  void AppendKernel(const std::vector<std::string>& per_core, const LoweredOp& op,
                    const hlo::HloInstruction& i);
  // An entry kernel that is not a collective, kernel windows on.
  bool WindowCandidate(const hlo::HloInstruction& i) const;
  // The VMEM a kernel may use: below the ring of a collective in flight, else all of it.
  int64_t VmemLimit() const { return outstanding_.empty() ? kCoreVmem : beside_limit_; }
  // The VMEM a kernel keeps to, to run beside another: half of what it may use.
  int64_t WindowVmem() const;
  bool HbmAccess(const hlo::HloInstruction& i, WindowKernel& k) const;
  int64_t BaseBeside(const WindowKernel& lag, int64_t bytes, int64_t limit) const;
  void SetWindow(int bank, int64_t base);
  // Awaits the lagging kernel's drain and returns to window 0.
  void CloseWindow();
  // The collective stream (a module with asynchronous all-reduces, docs/collectives.md):
  // every collective's kernels go there, started by the main stream with xsignal and awaited
  // at its done (an all-reduce-done, or at once for a synchronous collective). Kernels beside
  // an all-reduce plan for the VMEM below its ring; the window closes before a kernel that
  // cannot, and once the kernels beside it are estimated to cover the all-reduce's time (a
  // latency estimate, as XLA's scheduler covers an async op's), so that later kernels plan
  // for all of VMEM again.
  void AppendCollective(const std::vector<std::string>& per_core, const hlo::HloInstruction& i);
  void AwaitCollectivesThrough(const hlo::HloInstruction* start);  // null: all outstanding
  std::string CollectiveStreamText(size_t core) const;
  void LowerCalled(const hlo::HloComputation& comp, int64_t executions);

  // control_flow.cc, while_loop.cc
  void Enter(const hlo::HloComputation& comp);
  std::vector<ResultCopy> PlaceResult(const hlo::HloComputation& comp,
                                      const hlo::HloInstruction& caller);
  // The copy of element `leaf_element` of `leaf` into `dst`; a constant is a fill of its word
  // (a constant of several values: `op` becomes timing only, with a note).
  ValueCopy CopyOf(const hlo::HloInstruction* leaf, int64_t leaf_element, uint64_t dst,
                   const hlo::Shape& shape, LoweredOp& op);
  // Emits the copies whose source is not their destination; adds the bytes they move to `op`.
  void EmitCopies(const std::vector<ValueCopy>& copies, const std::string& tag, LoweredOp& op);
  void LowerCall(const hlo::HloInstruction& c, int64_t executions);
  void LowerConditional(const hlo::HloInstruction& c, int64_t executions);
  void LowerWhile(const hlo::HloInstruction& w, int64_t executions);
  void CarryState(const hlo::HloInstruction& w, int64_t executions);

  const hlo::HloModule& module_;
  const passes::MemoryPlan& plan_;
  const LowerOptions& opt_;
  std::vector<std::ostringstream> text_;
  std::vector<std::ostringstream> collective_text_;      // per core, when ctx_.collective_stream
  std::vector<const hlo::HloInstruction*> outstanding_;  // started, not yet awaited, in order
  double cover_left_ = 0;  // estimated seconds of the outstanding collectives not yet covered
  int64_t beside_limit_ = kBesideCollective;  // the VMEM below the one in flight's buffers
  double KernelSeconds(const LoweredOp& op) const;
  double CollectiveSeconds(const hlo::HloInstruction& start, const LoweredOp& op) const;
  LoweredModule out_;
  std::vector<const hlo::HloInstruction*> inputs_;  // the batch the host feeds each step
  OpContext ctx_;                                   // what every emitter is handed
  ValueBuffers buffers_;
  std::set<const hlo::HloComputation*> entered_;  // computations lowered at least once
  int conditionals_ = 0, kernels_ = 0, loops_ = 0, loop_depth_ = 0;
  std::optional<WindowKernel> lagging_;  // issued, its drain not yet awaited
  int window_bank_ = 0;                  // the sequencer's window, as emitted so far
  int64_t window_base_ = 0;
  int control_depth_ = 0;  // inside control flow: kernels drain one by one
};

}  // namespace tpusim::lowering
