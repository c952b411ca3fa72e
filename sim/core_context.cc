#include "sim/core_context.h"

#include <algorithm>

#include "sim/timing.h"

namespace tpusim::sim {

void UnitStats::Compact(TimeFs fold_before) {
  const std::vector<IntervalUnion::Interval>& pieces = union_.pieces();
  size_t folded = 0;  // the pieces are disjoint and sorted
  while (folded < pieces.size() && pieces[folded].second <= fold_before) {
    folded_total_ += pieces[folded].second - pieces[folded].first;
    folded_until_ = pieces[folded].second;
    ++folded;
  }
  union_.EraseFront(folded);
  if (folded) folded_until_ = std::max(folded_until_, fold_before);
  compacted_size_ = entries_ = pieces.size();
  has_tail_ = !pieces.empty();
  if (has_tail_) tail_ = pieces.back();
}

TimeFs UnitStats::BusyTotal() {
  Compact(0);
  TimeFs total = folded_total_;
  for (const auto& [s, e] : union_.pieces()) total += e - s;
  return total;
}

void CoreContext::Record(isa::Unit unit, const Issued& it, TimeFs start, TimeFs end, double flops,
                         uint64_t hbm_bytes, bool counts_as_busy) {
  if (counts_as_busy) {
    UnitStats& st = stats[static_cast<int>(unit)];
    if (unit_busy)
      st.AddBusy(start, end, [this] { return Now(); });
    else
      st.CountInstruction();
  }
  if (!sink) return;
  BusyRecord r;
  r.core = static_cast<uint16_t>(core);
  r.unit = unit;
  r.start = start;
  r.end = end;
  r.pc = it.pc;
  r.op = it.instr.op;
  r.tag = it.instr.tag;
  r.step = it.step;
  r.flops = flops;
  r.bytes = hbm_bytes;
  r.stream = it.stream;
  sink->OnBusy(r);
}

void CoreContext::RecordWait(isa::Unit unit, TimeFs start, TimeFs end, int flag, uint32_t step) {
  if (!sink || end <= start) return;
  sink->OnWait(
      WaitRecord{static_cast<uint16_t>(core), unit, start, end, static_cast<uint8_t>(flag), step});
}

void CoreContext::Fail(const Issued& it, const std::string& message) { Fail(it.pc, message); }

void CoreContext::Fail(uint32_t pc, const std::string& message) {
  if (error->empty()) {
    std::string mnemonic =
        pc < program->code.size() ? std::string(isa::Info(program->code[pc].op).mnemonic) : "?";
    *error = "core " + std::to_string(core) + ", pc " + std::to_string(pc) + " (" + mnemonic +
             "): " + message;
  }
  sc_core::sc_stop();
  throw SimAbort{};
}

}  // namespace tpusim::sim
