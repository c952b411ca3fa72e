// The scalar unit and sequencer of a TensorCore: fetches the program in order, runs
// scalar instructions itself (annotating their time with a quantum keeper, no event per
// instruction) and hands every other instruction to its unit's queue, stalling when that
// queue is full. After halt it waits for every unit to drain.
#pragma once

#include <array>
#include <functional>
#include <systemc>
#include <vector>

#include "sim/quantum_keeper.h"
#include "sim/unit.h"

namespace tpusim::sim {

class Sequencer : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Sequencer);
  // `stream` 0 runs the program from instruction 0, stream 1 (the collective stream) from
  // Program::collective_entry; each uses its own flags and `units`.
  Sequencer(sc_core::sc_module_name name, CoreContext& ctx, std::array<Unit*, isa::kNumUnits> units,
            int stream = 0);

  bool finished() const { return finished_; }
  // Host control (sim/host.h): once hosted, the program runs once per launched step.
  // The flag a hosted step waits on for its input batch: waits on it are infeed time.
  void SetHosted(int infeed_flag) { hosted_ = true, infeed_flag_ = infeed_flag; }
  void Launch(uint32_t steps);
  void Close();  // no more launches: finish after the launched steps
  uint32_t steps_done() const { return steps_done_; }
  // Called when a step has ended with every unit drained, before the next one starts.
  void SetStepEndHook(std::function<void(uint32_t step)> hook) { step_end_hook_ = std::move(hook); }
  sc_core::sc_event& step_done() { return step_done_; }
  TimeFs end_time() const { return end_time_; }
  int64_t reg(int i) const { return regs_[i]; }
  // What the sequencer is blocked on, for deadlock reports ("" if not blocked).
  const std::string& blocked_on() const { return blocked_on_; }

 private:
  void Run();
  void RunProgramOnce();
  // Executes one scalar-unit instruction; returns the next pc.
  uint32_t ExecuteScalar(uint32_t pc, const isa::Instr& in);
  // The instruction at pc with its register operands read.
  Issued Resolve(uint32_t pc, const isa::Instr& in) const;
  void Dispatch(Issued it, isa::Unit unit);
  // Issues a vloop and its body; returns the pc after the body.
  uint32_t DispatchLoop(uint32_t pc, const isa::Instr& in);
  isa::Unit TargetUnit(uint32_t pc, const isa::Instr& in);
  void Advance(TimeFs fs);
  TimeFs LocalNow() { return qk_.current_time(); }
  void Sync();
  void FlushScalarRun();
  int64_t SmemWord(uint32_t pc, int64_t addr);

  // What fetch needs of each instruction, decoded once from the program.
  struct Decoded {
    isa::Unit unit;    // where it runs; kByOperand: names a unit this core lacks (fails)
    uint8_t operands;  // how many operands the opcode has
    uint8_t sregs;     // bit i: operand i is read from a scalar register
    TimeFs cost_fs;    // fixed cost as scalar work (branches: not taken)
    TimeFs taken_fs;   // the same for a taken branch
  };
  void Decode();

  SyncFlags& flags() { return ctx_.Flags(stream_); }

  CoreContext& ctx_;
  std::array<Unit*, isa::kNumUnits> units_;
  int stream_ = 0;
  uint32_t entry_ = 0, end_ = 0;  // this stream's code: [entry_, end_)
  // A main-stream wait on a flag the collective stream's xsignal feeds (SyncFlags::
  // collective) is exposed collective time, reported as HostKind::kAllReduce.

  std::vector<Decoded> decoded_;  // by pc - entry_
  TimeFs issue_fs_ = 0;           // one issue slot (scalar_cycles)
  QuantumKeeper qk_;
  std::array<int64_t, isa::kNumSregs> regs_{};
  // The kernel window (isa `window`) the instructions it issues are tagged with.
  uint8_t bank_ = 0;
  uint32_t vmem_base_ = 0;
  bool finished_ = false;
  bool hosted_ = false, closed_ = false;
  int infeed_flag_ = -1;
  uint32_t step_ = 0, launched_ = 0, steps_done_ = 0;
  sc_core::sc_event launch_, step_done_;
  std::function<void(uint32_t)> step_end_hook_;
  TimeFs end_time_ = 0;
  std::string blocked_on_;
  // The current run of back-to-back scalar work, recorded as one busy interval.
  TimeFs run_start_ = 0;
  uint32_t run_pc_ = 0;
  bool in_run_ = false;
};

}  // namespace tpusim::sim
