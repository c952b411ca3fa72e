// The collective stream's part of the Lowerer (lowerer.h, docs/collectives.md): collectives
// handed to the second instruction stream, the main stream's waits for them, and the
// estimates that time a window beside an asynchronous all-reduce.
#include <algorithm>

#include "compiler/assembly/asm_util.h"
#include "compiler/collectives/ring_estimates.h"
#include "compiler/lowering/driver/lowerer.h"

namespace tpusim::lowering {

using hlo::HloInstruction;
using hlo::Opcode;

void Lowerer::AppendCollective(const std::vector<std::string>& per_core, const HloInstruction& i) {
  if (per_core.empty()) return;
  const std::string prefix = "k" + std::to_string(kernels_++) + "_";
  // Everything before it has drained (the barrier after the last kernel): the collective may
  // read its operands and write its result.
  Emit("    xsignal f" + std::to_string(kStartFlag) + ", 1   # start " + i.name() + "\n");
  const std::string drain = "    signal dma, f" + std::to_string(kStreamBarrierFlag) +
                            ", 1\n    signal vpu, f" + std::to_string(kStreamBarrierFlag) +
                            ", 1\n    wait seq, f" + std::to_string(kStreamBarrierFlag) + ", 2\n";
  for (size_t c = 0; c < collective_text_.size(); ++c)
    collective_text_[c] << ".tag \"" << i.name() << "\"\n    wait seq, f" << kStartFlag << ", 1\n"
                        << assembly::ScopeKernel(per_core[c], prefix) << drain << "    xsignal f"
                        << kDoneFlag << ", 1\n";
  outstanding_.push_back(&i);
  if (!hlo::IsAsyncCollectiveStart(i.opcode())) AwaitCollectivesThrough(&i);
}

// A kernel's roofline time per execution.
double Lowerer::KernelSeconds(const LoweredOp& op) const {
  return std::max(op.flops / opt_.peak_flops_per_s,
                  static_cast<double>(op.hbm_bytes) / opt_.hbm_bytes_per_s);
}

// The ring estimates (collectives/ring_estimates.h) of the board being lowered for.
collectives::RingCostModel Lowerer::RingCosts() const {
  return {opt_.cores, opt_.peak_flops_per_s, opt_.hbm_bytes_per_s, opt_.link_bytes_per_s,
          opt_.hop_seconds};
}

// An all-reduce moves its array in and out of HBM (op.hbm_bytes = 2 x its bytes).
double Lowerer::AllReduceSeconds(const LoweredOp& op) const {
  return collectives::RingAllReduceSeconds(static_cast<double>(op.hbm_bytes) / 2, RingCosts());
}

// An all-gather loads its part and stores the result (op.hbm_bytes = (1 + 1/n) x result).
double Lowerer::AllGatherSeconds(const LoweredOp& op) const {
  const double n = opt_.cores;
  return collectives::RingAllGatherSeconds(static_cast<double>(op.hbm_bytes) * n / (n + 1),
                                           RingCosts());
}

// A reduce-scatter loads its input and stores a part (op.hbm_bytes = (1 + 1/n) x input).
double Lowerer::ReduceScatterSeconds(const LoweredOp& op) const {
  const double n = opt_.cores;
  return collectives::RingReduceScatterSeconds(static_cast<double>(op.hbm_bytes) * n / (n + 1),
                                               RingCosts());
}

// The collective stream serves the starts in order, so awaiting one awaits those before it.
void Lowerer::AwaitCollectivesThrough(const HloInstruction* start) {
  size_t count = outstanding_.size();
  if (start) {
    auto it = std::find(outstanding_.begin(), outstanding_.end(), start);
    if (it == outstanding_.end()) return;  // already awaited
    count = static_cast<size_t>(it - outstanding_.begin()) + 1;
  }
  if (count == 0) return;
  Emit("    wait seq, f" + std::to_string(kDoneFlag) + ", " + std::to_string(count) + "\n");
  outstanding_.erase(outstanding_.begin(),
                     outstanding_.begin() + static_cast<std::ptrdiff_t>(count));
  if (outstanding_.empty()) cover_left_ = 0, beside_limit_ = kBesideCollective;
}

std::string Lowerer::CollectiveStreamText(size_t core) const {
  if (!ctx_.collective_stream) return "";
  return ".collective\n" + collective_text_[core].str() + "    halt\n";
}

}  // namespace tpusim::lowering
