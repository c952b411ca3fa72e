#include "sim/sequencer.h"

#include "sim/timing.h"
#include "sim/vpu.h"

namespace tpusim::sim {

using isa::Opcode;

Sequencer::Sequencer(sc_core::sc_module_name name, CoreContext& ctx,
                     std::array<Unit*, isa::kNumUnits> units, int stream)
    : sc_module(name),
      ctx_(ctx),
      units_(units),
      stream_(stream),
      entry_(stream ? ctx.program->collective_entry.value_or(0) : 0) {
  // Scalar work runs ahead of simulated time by at most one quantum before syncing.
  tlm::tlm_global_quantum::instance().set(sc_core::sc_time::from_value(ctx.Cycles(1000)));
  qk_.Reset();
  Decode();
  SC_THREAD(Run);
}

void Sequencer::Decode() {
  issue_fs_ = ctx_.Cycles(ctx_.cfg->scalar_cycles);
  std::array<Decoded, isa::kNumOpcodes> by_opcode;  // all but by-operand units
  for (const isa::OpInfo& info : isa::AllOps()) {
    Decoded& d = by_opcode[static_cast<int>(info.opcode)];
    d.unit = info.unit;
    d.operands = static_cast<uint8_t>(info.num_operands());
    d.sregs = 0;
    for (int i = 0; i < info.num_operands(); ++i)
      if (info.operand(i) == isa::OperandKind::kSreg) d.sregs |= static_cast<uint8_t>(1 << i);
    d.cost_fs = ctx_.Cycles(FixedCostCycles(*ctx_.cfg, info.timing, false));
    d.taken_fs = ctx_.Cycles(FixedCostCycles(*ctx_.cfg, info.timing, true));
  }
  const auto& code = ctx_.program->code;
  // The collective stream's code (from its entry on) reports to the main stream with
  // xsignal: waits on those flags are the main stream waiting for collectives.
  if (stream_ == 1)
    for (size_t pc = entry_; pc < code.size(); ++pc)
      if (code[pc].op == Opcode::kXsignal) ctx_.flags.MarkCollective(code[pc].a[0]);
  // Each stream decodes its own code: the main stream's ends where the collective stream's
  // begins.
  end_ = stream_ == 0 && ctx_.program->collective_entry ? *ctx_.program->collective_entry
                                                        : static_cast<uint32_t>(code.size());
  decoded_.resize(end_ - entry_);
  for (size_t pc = entry_; pc < end_; ++pc) {
    const isa::Instr& in = code[pc];
    Decoded& d = decoded_[pc - entry_] = by_opcode[static_cast<int>(in.op)];
    if (d.unit != isa::Unit::kByOperand) continue;
    const int unit = isa::Info(in.op).operand(0) == isa::OperandKind::kMxu
                         ? static_cast<int>(isa::Unit::kMxu0) + in.a[0]
                         : in.a[0];
    if (unit >= 0 && unit < isa::kNumUnits && (unit == 0 || units_[unit]))
      d.unit = static_cast<isa::Unit>(unit);
  }
}

void Sequencer::Advance(TimeFs fs) {
  qk_.Inc(fs);
  if (qk_.NeedSync()) Sync();
}

void Sequencer::Sync() { qk_.Sync(); }

void Sequencer::FlushScalarRun() {
  if (!in_run_) return;
  in_run_ = false;
  Issued it;
  it.pc = run_pc_;
  it.instr = ctx_.program->code[run_pc_];
  it.step = step_;
  it.stream = static_cast<uint8_t>(stream_);
  TimeFs end = LocalNow();
  ctx_.Record(isa::Unit::kScalar, it, run_start_, end, 0, 0);
}

isa::Unit Sequencer::TargetUnit(uint32_t pc, const isa::Instr& in) {
  const isa::OpInfo& info = isa::Info(in.op);
  if (info.unit != isa::Unit::kByOperand) return info.unit;
  int unit = info.operand(0) == isa::OperandKind::kMxu
                 ? static_cast<int>(isa::Unit::kMxu0) + in.a[0]
                 : in.a[0];
  if (unit < 0 || unit >= isa::kNumUnits || (unit != 0 && !units_[unit]))
    ctx_.Fail(pc, "names unit " + std::string(isa::UnitName(static_cast<isa::Unit>(unit))) +
                      (stream_ ? ", which the collective stream does not have (it has dma and vpu)"
                               : ", which this core does not have (" +
                                     std::to_string(ctx_.cfg->mxus) + " MXUs)"));
  return static_cast<isa::Unit>(unit);
}

void Sequencer::Launch(uint32_t steps) {
  launched_ += steps;
  launch_.notify(sc_core::SC_ZERO_TIME);
}

void Sequencer::Close() {
  closed_ = true;
  launch_.notify(sc_core::SC_ZERO_TIME);
}

// Without a host the program runs once. With one, each launched step runs the program
// from pc 0 to halt, then the sequencer waits for the next launch until closed.
void Sequencer::Run() {
  try {
    for (step_ = 0;; ++step_) {
      if (hosted_) {
        blocked_on_ = "the host to launch step " + std::to_string(step_);
        while (launched_ <= step_ && !closed_) wait(launch_);
        blocked_on_.clear();
        if (launched_ <= step_) break;
      } else if (step_ > 0) {
        break;
      }
      // A step runs from the end of the previous one (XProf's step-to-step time), so host
      // dispatch overhead and infeed waits before it count in it.
      TimeFs start = step_ == 0 ? 0 : end_time_;
      RunProgramOnce();
      end_time_ = ctx_.Now();
      if (step_end_hook_) step_end_hook_(step_);
      if (ctx_.sink)
        ctx_.sink->OnStep(StepRecord{static_cast<uint16_t>(ctx_.core), step_, start, end_time_});
      steps_done_ = step_ + 1;
      step_done_.notify(sc_core::SC_ZERO_TIME);
    }
    finished_ = true;
  } catch (const SimAbort&) {
  }
}

void Sequencer::RunProgramOnce() {
  uint32_t pc = entry_;
  bank_ = 0, vmem_base_ = 0;
  const auto& code = ctx_.program->code;
  for (;;) {
    if (pc >= end_ || pc < entry_) {
      if (pc < code.size())
        ctx_.Fail(pc, stream_ ? "the collective stream jumps into the main stream's code"
                              : "the main stream runs into the collective stream's code (no halt "
                                "before .collective)");
      ctx_.Fail(pc - 1, "execution ran past the end of the program (no halt)");
    }
    const isa::Instr& in = code[pc];
    const Decoded& dec = decoded_[pc - entry_];
    const isa::Unit unit = dec.unit != isa::Unit::kByOperand ? dec.unit : TargetUnit(pc, in);
    if (in.op == Opcode::kVloop) {
      pc = DispatchLoop(pc, in);
      continue;
    }
    if (unit != isa::Unit::kScalar) {
      Dispatch(Resolve(pc, in), unit);
      ++pc;
      continue;
    }
    if (in.op == Opcode::kHalt) break;
    if (!in_run_) in_run_ = true, run_start_ = LocalNow(), run_pc_ = pc;
    pc = ExecuteScalar(pc, in);
  }
  FlushScalarRun();
  Sync();
  blocked_on_ = "draining units after halt";
  TimeFs end = ctx_.Now();
  for (Unit* u : units_) {
    if (!u) continue;
    while (!u->idle()) u->became_idle().Wait();
  }
  for (Unit* u : units_)
    if (u) end = std::max(end, u->drain_time());
  if (end > ctx_.Now()) wait(sc_core::sc_time::from_value(end - ctx_.Now()));
  blocked_on_.clear();
}

Issued Sequencer::Resolve(uint32_t pc, const isa::Instr& in) const {
  const Decoded& d = decoded_[pc - entry_];
  Issued it;
  it.instr = in;
  it.pc = pc;
  it.step = step_;
  it.stream = static_cast<uint8_t>(stream_);
  it.bank = bank_;
  it.vmem_base = vmem_base_;
  for (int i = 0; i < d.operands; ++i) it.v[i] = d.sregs >> i & 1 ? regs_[in.a[i]] : in.a[i];
  return it;
}

// vloop ra, n: the next n instructions, their registers read now, go to the VPU as the
// body of one queue entry; the VPU runs it ra times. Zero trips issue nothing.
uint32_t Sequencer::DispatchLoop(uint32_t pc, const isa::Instr& in) {
  const auto& code = ctx_.program->code;
  const int64_t n = in.a[1];
  if (n < 1) ctx_.Fail(pc, "a vloop body needs at least one instruction, got " + std::to_string(n));
  if (pc + 1 + static_cast<uint64_t>(n) > end_)
    ctx_.Fail(pc, "the vloop body of " + std::to_string(n) +
                      " instructions runs past the end of the program");
  auto body = std::make_shared<std::vector<Issued>>();
  body->reserve(static_cast<size_t>(n));
  for (uint32_t k = pc + 1; k <= pc + n; ++k) {
    const isa::Instr& b = code[k];
    if (isa::Info(b.op).unit != isa::Unit::kVpu || b.op == Opcode::kVloop)
      ctx_.Fail(k, "cannot be in the body of the vloop at pc " + std::to_string(pc) +
                       ": a body holds VPU work only (no scalar, wait, signal or nested vloop)");
    body->push_back(Resolve(k, b));
  }
  Issued loop = Resolve(pc, in);
  if (loop.v[0] > 0) {
    loop.body = std::move(body);
    Dispatch(std::move(loop), isa::Unit::kVpu);
  } else {
    Advance(issue_fs_);
  }
  return pc + 1 + static_cast<uint32_t>(n);
}

void Sequencer::Dispatch(Issued it, isa::Unit unit) {
  UnitQueue& q = units_[static_cast<int>(unit)]->queue();
  if (!q.NextSlotKnown()) {
    FlushScalarRun();
    Sync();
    blocked_on_ = "a full " + std::string(isa::UnitName(unit)) + " queue";
    while (!q.NextSlotKnown()) q.issued.Wait();
    blocked_on_.clear();
  }
  TimeFs now = LocalNow(), free = q.NextSlotFreeAt();
  if (free > now) {  // stalled on a full queue until the slot frees
    FlushScalarRun();
    qk_.Inc(free - now);
    now = free;
  }
  if (!in_run_) in_run_ = true, run_start_ = now, run_pc_ = it.pc;
  it.ready = now;
  q.Push(std::move(it));
  Advance(issue_fs_);  // one issue slot
}

int64_t Sequencer::SmemWord(uint32_t pc, int64_t addr) {
  if (addr < 0 || addr % 4 || !ctx_.smem->Contains(static_cast<uint64_t>(addr), 4))
    ctx_.Fail(pc, "SMEM address " + std::to_string(addr) + " is out of range or not 4-aligned");
  return addr;
}

uint32_t Sequencer::ExecuteScalar(uint32_t pc, const isa::Instr& in) {
  const auto& a = in.a;
  auto& r = regs_;
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  auto s = [](uint64_t x) { return static_cast<int64_t>(x); };
  bool taken = false;
  uint32_t next = pc + 1;
  switch (in.op) {
    case Opcode::kNop:
      break;
    case Opcode::kLi:
      r[a[0]] = a[1];
      break;
    case Opcode::kMov:
      r[a[0]] = r[a[1]];
      break;
    case Opcode::kAdd:
      r[a[0]] = s(u(r[a[1]]) + u(r[a[2]]));
      break;
    case Opcode::kSub:
      r[a[0]] = s(u(r[a[1]]) - u(r[a[2]]));
      break;
    case Opcode::kMul:
      r[a[0]] = s(u(r[a[1]]) * u(r[a[2]]));
      break;
    case Opcode::kAnd:
      r[a[0]] = r[a[1]] & r[a[2]];
      break;
    case Opcode::kOr:
      r[a[0]] = r[a[1]] | r[a[2]];
      break;
    case Opcode::kXor:
      r[a[0]] = r[a[1]] ^ r[a[2]];
      break;
    case Opcode::kShl:
      r[a[0]] = s(u(r[a[1]]) << (r[a[2]] & 63));
      break;
    case Opcode::kShr:
      r[a[0]] = s(u(r[a[1]]) >> (r[a[2]] & 63));
      break;
    case Opcode::kSra:
      r[a[0]] = r[a[1]] >> (r[a[2]] & 63);
      break;
    case Opcode::kSlt:
      r[a[0]] = r[a[1]] < r[a[2]] ? 1 : 0;
      break;
    case Opcode::kAddi:
      r[a[0]] = s(u(r[a[1]]) + u(int64_t{a[2]}));
      break;
    case Opcode::kMuli:
      r[a[0]] = s(u(r[a[1]]) * u(int64_t{a[2]}));
      break;
    case Opcode::kAndi:
      r[a[0]] = r[a[1]] & a[2];
      break;
    case Opcode::kShli:
      r[a[0]] = s(u(r[a[1]]) << (a[2] & 63));
      break;
    case Opcode::kShri:
      r[a[0]] = s(u(r[a[1]]) >> (a[2] & 63));
      break;
    case Opcode::kBeq:
      taken = r[a[0]] == r[a[1]];
      break;
    case Opcode::kBne:
      taken = r[a[0]] != r[a[1]];
      break;
    case Opcode::kBlt:
      taken = r[a[0]] < r[a[1]];
      break;
    case Opcode::kBge:
      taken = r[a[0]] >= r[a[1]];
      break;
    case Opcode::kJmp:
      taken = true;
      break;
    case Opcode::kSld: {
      int32_t w;
      ctx_.smem->Read(u(SmemWord(pc, r[a[1]] + a[2])), &w, 4);
      r[a[0]] = w;
      break;
    }
    case Opcode::kSst: {
      int32_t w = static_cast<int32_t>(r[a[0]]);
      ctx_.smem->Write(u(SmemWord(pc, r[a[1]] + a[2])), &w, 4);
      break;
    }
    case Opcode::kSflag:
      Sync();
      flags().Set(isa::BankedFlag(a[0], bank_), a[1]);
      break;
    case Opcode::kSignal:
      Sync();
      flags().Add(isa::BankedFlag(a[1], bank_), a[2]);
      break;
    case Opcode::kWindow:
      if (a[0] < 0 || a[0] >= isa::kWindowBanks)
        ctx_.Fail(pc, "names flag bank " + std::to_string(a[0]) + "; there are banks 0 and 1");
      if (a[1] < 0 || static_cast<uint64_t>(a[1]) >= ctx_.cfg->vmem_bytes || a[1] % kVmemAlign)
        ctx_.Fail(pc, "moves VMEM by " + std::to_string(a[1]) + " bytes: not a multiple of " +
                          std::to_string(kVmemAlign) + " below the core's " +
                          std::to_string(ctx_.cfg->vmem_bytes) + " bytes of VMEM");
      bank_ = static_cast<uint8_t>(a[0]), vmem_base_ = static_cast<uint32_t>(a[1]);
      break;
    case Opcode::kXsignal:
      if (!ctx_.program->collective_entry)
        ctx_.Fail(pc, "signals the collective stream of a program that has none (.collective)");
      Sync();
      ctx_.Flags(1 - stream_).Add(a[0], a[1]);
      break;
    case Opcode::kWait: {
      FlushScalarRun();
      Sync();
      TimeFs begin = ctx_.Now();
      const int f = isa::BankedFlag(a[1], bank_);
      blocked_on_ = "flag " + FlagName(f) + " >= " + std::to_string(a[2]);
      while (flags().value(f) < a[2]) flags().changed(f).Wait();
      blocked_on_.clear();
      flags().Add(f, -int64_t{a[2]});
      ctx_.RecordWait(isa::Unit::kScalar, begin, ctx_.Now(), a[1], step_);
      const bool infeed = stream_ == 0 && a[1] == infeed_flag_;
      const bool collective = stream_ == 0 && flags().collective(f);
      if ((infeed || collective) && ctx_.sink && ctx_.Now() > begin)
        ctx_.sink->OnHost(HostRecord{static_cast<uint16_t>(ctx_.core),
                                     infeed ? HostKind::kInfeedWait : HostKind::kAllReduce, begin,
                                     ctx_.Now(), step_});
      in_run_ = true, run_start_ = ctx_.Now(), run_pc_ = pc;
      break;
    }
    default:
      ctx_.Fail(pc, "is not a scalar-unit instruction");
  }
  const Decoded& d = decoded_[pc - entry_];
  if (taken) next = static_cast<uint32_t>(a[d.operands - 1]);
  Advance(taken ? d.taken_fs : d.cost_fs);
  return next;
}

}  // namespace tpusim::sim
