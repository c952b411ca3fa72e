#include "sim/core_context.h"

#include <algorithm>

#include "sim/timing.h"

namespace tpusim::sim {

void UnitQueue::Push(Issued item) {
  items_.push_back(std::move(item));
  ++pushed_count_;
  pushed.notify(sc_core::SC_ZERO_TIME);
}

Issued UnitQueue::Pop() {
  Issued it = std::move(items_.front());
  items_.pop_front();
  return it;
}

void UnitQueue::MarkIssued(TimeFs t) {
  issue_ring_[issued_count_ % depth_] = t;
  ++issued_count_;
  issued.notify(sc_core::SC_ZERO_TIME);
}

bool UnitQueue::NextSlotKnown() const {
  return pushed_count_ < depth_ || issued_count_ > pushed_count_ - depth_;
}

TimeFs UnitQueue::NextSlotFreeAt() const {
  if (pushed_count_ < depth_) return 0;
  return issue_ring_[(pushed_count_ - depth_) % depth_];
}

void UnitStats::AddBusy(TimeFs start, TimeFs end, TimeFs now) {
  ++instructions_;
  if (end <= start) return;
  max_duration_ = std::max(max_duration_, end - start);
  if (start < folded_until_) {  // reaches into folded time: count only what is new
    ++late_;
    if (end <= folded_until_) return;
    start = folded_until_;
  }
  if (!intervals_.empty() && intervals_.back().second >= start &&
      intervals_.back().first <= start) {  // common case: extends the latest interval
    intervals_.back().second = std::max(intervals_.back().second, end);
    return;
  }
  intervals_.emplace_back(start, end);
  if (intervals_.size() > 2 * compacted_size_ + 4096) {
    const TimeFs margin = std::max(kFoldMargin, 4 * max_duration_);
    Compact(now > margin ? now - margin : 0);
  }
}

void UnitStats::Compact(TimeFs fold_before) {
  std::sort(intervals_.begin(), intervals_.end());
  size_t out = 0;
  for (size_t i = 1; i < intervals_.size(); ++i) {
    if (intervals_[i].first <= intervals_[out].second)
      intervals_[out].second = std::max(intervals_[out].second, intervals_[i].second);
    else
      intervals_[++out] = intervals_[i];
  }
  if (!intervals_.empty()) intervals_.resize(out + 1);
  size_t folded = 0;  // the merged intervals are disjoint and sorted
  while (folded < intervals_.size() && intervals_[folded].second <= fold_before) {
    folded_total_ += intervals_[folded].second - intervals_[folded].first;
    folded_until_ = intervals_[folded].second;
    ++folded;
  }
  intervals_.erase(intervals_.begin(), intervals_.begin() + static_cast<std::ptrdiff_t>(folded));
  if (folded) folded_until_ = std::max(folded_until_, fold_before);
  compacted_size_ = intervals_.size();
}

TimeFs UnitStats::BusyTotal() {
  Compact(0);
  TimeFs total = folded_total_;
  for (auto& [s, e] : intervals_) total += e - s;
  return total;
}

TimeFs CoreContext::Cycles(int64_t n) const { return CyclesToFs(*cfg, n); }

void CoreContext::Record(isa::Unit unit, const Issued& it, TimeFs start, TimeFs end, double flops,
                         uint64_t hbm_bytes, bool counts_as_busy) {
  if (counts_as_busy) stats[static_cast<int>(unit)].AddBusy(start, end, Now());
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
