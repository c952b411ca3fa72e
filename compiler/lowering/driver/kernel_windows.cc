// The lagged drain barrier between independent kernels (lowerer.h, docs/lowering.md "Kernel
// windows"): a kernel is issued while the one before it still drains, in the other flag bank
// and a VMEM range of its own (isa `window`), so that its first copies overlap the last
// one's tail, as XLA's memory-space assignment prefetches an op's operands into VMEM while
// the op before it runs.
#include <algorithm>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/driver/lowerer.h"
#include "isa/isa.h"

namespace tpusim::lowering {

using hlo::HloInstruction;

// The barrier's flag and the kernel flags are the ones the ISA banks.
static_assert(assembly::kBarrierFlag == isa::kBankedBarrierFlag);
static_assert(assembly::kCollectiveFlagBase == isa::kBankedFlags);

namespace {

int64_t AlignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

bool Overlap(const std::vector<HbmRange>& a, const std::vector<HbmRange>& b) {
  for (const HbmRange& x : a)
    for (const HbmRange& y : b)
      if (x.begin < y.end && y.begin < x.end) return true;
  return false;
}

}  // namespace

bool Lowerer::WindowCandidate(const HloInstruction& i) const {
  return opt_.kernel_windows && control_depth_ == 0 && !hlo::IsCollective(i.opcode());
}

int64_t Lowerer::WindowVmem() const { return VmemLimit() / 2 / kWindowAlign * kWindowAlign; }

void Lowerer::EmitRaw(const std::string& s) {
  for (auto& t : text_) t << s;
}

void Lowerer::SetWindow(int bank, int64_t base) {
  if (bank == window_bank_ && base == window_base_) return;
  window_bank_ = bank, window_base_ = base;
  EmitRaw("    window " + std::to_string(bank) + ", " + std::to_string(base) + "\n");
}

// The HBM an entry kernel reads (its operands' buffers) and writes (its own); false when a
// buffer is not known (the kernel then drains alone).
bool Lowerer::HbmAccess(const HloInstruction& i, WindowKernel& k) const {
  auto add = [&](const HloInstruction* v, std::vector<HbmRange>& to) {
    if (v->opcode() == hlo::Opcode::kConstant) return true;  // inlined: no buffer
    for (int64_t e = 0; e < Leaves(v->shape()); ++e) {
      const auto r = buffers_.EntryRange(v, e);
      if (!r) return false;
      to.push_back({r->first, r->second});
    }
    return true;
  };
  for (const HloInstruction* o : i.operands())
    if (!add(o, k.reads)) return false;
  return add(&i, k.writes);
}

// Where in VMEM a kernel of `bytes` goes beside the lagging one: above it, else below it;
// -1 when neither range fits under `limit`.
int64_t Lowerer::BaseBeside(const WindowKernel& lag, int64_t bytes, int64_t limit) const {
  const int64_t above = AlignUp(lag.vmem_end, kWindowAlign);
  if (above + bytes <= limit) return above;
  if (bytes <= lag.vmem_begin) return 0;
  return -1;
}

void Lowerer::AppendKernel(const std::vector<std::string>& per_core, const LoweredOp& op,
                           const HloInstruction& i) {
  if (per_core.empty()) return;
  WindowKernel k;
  if (!WindowCandidate(i) || op.vmem_bytes < 0 || !HbmAccess(i, k)) return AppendDrained(per_core);
  const int64_t bytes = std::max<int64_t>(op.vmem_bytes, 1);
  int64_t base = -1;
  if (lagging_ && !Overlap(k.reads, lagging_->writes) && !Overlap(k.writes, lagging_->reads) &&
      !Overlap(k.writes, lagging_->writes))
    base = BaseBeside(*lagging_, bytes, VmemLimit());
  if (base < 0) CloseWindow(), base = 0;
  // Beside a lagging kernel the other bank; alone, bank 0 (CloseWindow left it there).
  k.bank = lagging_ ? 1 - lagging_->bank : 0;
  k.vmem_begin = base, k.vmem_end = base + bytes;
  SetWindow(k.bank, base);
  const std::string prefix = "k" + std::to_string(kernels_++) + "_";
  const std::string signals = assembly::DrainSignals(opt_.mxus_per_core);
  for (size_t c = 0; c < text_.size(); ++c)
    text_[c] << assembly::ScopeKernel(assembly::DropTrailingSeqWaits(per_core[c]), prefix)
             << signals;
  // The kernel before it drains while this one runs: its bank is free once awaited.
  if (lagging_) {
    SetWindow(lagging_->bank, 0);
    EmitRaw(assembly::DrainWait(opt_.mxus_per_core));
  }
  lagging_ = std::move(k);
}

void Lowerer::CloseWindow() {
  if (!lagging_) return;
  SetWindow(lagging_->bank, 0);
  EmitRaw(assembly::DrainWait(opt_.mxus_per_core));
  lagging_.reset();
  SetWindow(0, 0);
}

}  // namespace tpusim::lowering
