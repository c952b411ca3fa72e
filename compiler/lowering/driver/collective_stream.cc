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

collectives::RingCostModel RingCostsOf(const LowerOptions& o) {
  return {o.cores, o.peak_flops_per_s, o.hbm_bytes_per_s, o.link_bytes_per_s, o.hop_seconds};
}

// A start's ring time, from the bytes its kernel moves through HBM: an all-reduce its array
// in and out (2 x its bytes); an all-gather its part in and the result out ((1 + 1/n) x the
// result); a reduce-scatter its input in and a part out ((1 + 1/n) x the input).
double Lowerer::CollectiveSeconds(const HloInstruction& start, const LoweredOp& op) const {
  const collectives::RingCostModel costs = RingCostsOf(opt_);
  const double bytes = static_cast<double>(op.hbm_bytes), n = opt_.cores;
  switch (start.opcode()) {
    case Opcode::kAllGatherStart:
      return collectives::RingAllGatherSeconds(bytes * n / (n + 1), costs);
    case Opcode::kReduceScatterStart:
      return collectives::RingReduceScatterSeconds(bytes * n / (n + 1), costs);
    default:
      return collectives::RingAllReduceSeconds(bytes / 2, costs);
  }
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
  // A kernel still draining beside the wait keeps its window: it is independent of the
  // collectives (the scheduler kept it apart from them).
  EmitRaw("    wait seq, f" + std::to_string(kDoneFlag) + ", " + std::to_string(count) + "\n");
  outstanding_.erase(outstanding_.begin(),
                     outstanding_.begin() + static_cast<std::ptrdiff_t>(count));
  if (outstanding_.empty()) cover_left_ = 0, beside_limit_ = kBesideCollective;
}

std::string Lowerer::CollectiveStreamText(size_t core) const {
  if (!ctx_.collective_stream) return "";
  return ".collective\n" + collective_text_[core].str() + "    halt\n";
}

}  // namespace tpusim::lowering
