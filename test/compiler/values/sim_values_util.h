// Compiles an HLO module for v3-8, simulates it with values (random inputs, as `tpusim run`)
// and compares every result with the reference evaluator. One simulation per process:
// call it once per test (each test is its own ctest case).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "driver/board_target.h"
#include "driver/run_values.h"
#include "driver/step_check.h"
#include "isa/assembler.h"
#include "sim/config.h"
#include "sim/simulation.h"

namespace tpusim::testing {

struct ValueRun {
  bool exact = false;       // every kernel computes values (else not simulated)
  std::string inexact_ops;  // the ops that do not
  double error = -1;        // max |simulated - reference| / max |reference|
  bool nonzero = false;     // the first result on core 0 has a nonzero element
  double time_us = 0;       // simulated time of the run
  double mxu_busy_us = 0;   // summed over core 0's MXUs
};

// " %name (opcode)" for each op of `c` whose kernel only models time.
inline std::string InexactOps(const CompiledModule& c) {
  std::string ops;
  for (const lowering::LoweredOp& op : c.lowered.ops)
    if (!op.exact) ops += " %" + op.name + " (" + op.opcode + ")";
  return ops;
}

// Assembles every core's program of `c` into `simulation`; false (after a test failure)
// when one does not assemble.
inline bool AddPrograms(const CompiledModule& c, sim::Simulation& simulation) {
  try {
    for (const isa::Program& program : driver::AssembleCores(c.lowered, "test.hlo"))
      simulation.AddCore(program);
  } catch (const std::runtime_error& e) {
    ADD_FAILURE() << e.what();
    return false;
  }
  return true;
}

// Compiles `hlo` for `board` (no infeed) and notes whether every kernel computes values
// (`exact`) and which do not; null, after a test failure, when it does not compile.
inline std::shared_ptr<const CompiledModule> CompileForValues(const std::string& hlo,
                                                              const sim::BoardConfig& board,
                                                              bool& exact,
                                                              std::string& inexact_ops) {
  auto compiled = CompileForBoard(hlo, "test.hlo", driver::TargetFor(board, /*infeed=*/false));
  if (!compiled.ok()) {
    ADD_FAILURE() << compiled.status().message();
    return nullptr;
  }
  exact = compiled.value()->lowered.exact;
  inexact_ops = InexactOps(*compiled.value());
  return compiled.value();
}

// `corrupt`: overwrite the first result element on core 0 before comparing (a control).
// On `board` (a preset changed by the test: less HBM).
inline ValueRun SimulateValuesOn(const sim::BoardConfig& board, const std::string& hlo,
                                 bool corrupt = false) {
  ValueRun out;
  const auto compiled = CompileForValues(hlo, board, out.exact, out.inexact_ops);
  if (!compiled || !out.exact) return out;
  const CompiledModule& c = *compiled;
  sim::Simulation simulation(board, sim::RunOptions{.functional = true});
  if (!AddPrograms(c, simulation)) return out;
  auto args = driver::LoadInputs(simulation, c, /*seed=*/1);
  sim::RunReport r = simulation.Run();
  EXPECT_TRUE(r.ok) << r.error;
  out.time_us = r.time_us;
  for (const sim::UnitReport& u : r.units)
    if (u.name.starts_with("mxu")) out.mxu_busy_us += static_cast<double>(u.busy_fs) * 1e-9;
  const uint64_t first = c.lowered.outputs.at(0).address;
  float v[64] = {};
  simulation.core(0).hbm().Read(first, reinterpret_cast<uint8_t*>(v), sizeof v);
  for (float x : v) out.nonzero = out.nonzero || x != 0;
  if (corrupt) {
    const float bad = v[0] + 1000.0f;
    simulation.core(0).hbm().Write(first, reinterpret_cast<const uint8_t*>(&bad), sizeof bad);
  }
  out.error = driver::CompareWithEvaluator(simulation, c, std::move(args)).error;
  return out;
}

inline ValueRun SimulateValues(const std::string& hlo, bool corrupt = false) {
  return SimulateValuesOn(sim::LoadConfig("v3-8"), hlo, corrupt);
}

// The module computes exact values and they equal the evaluator's within `tolerance` (of
// the largest |reference|): f32 rounding, bf16 operands of dots as the evaluator rounds them.
inline void ExpectMatch(const std::string& hlo, double tolerance = 1e-5) {
  ValueRun r = SimulateValues(hlo);
  ASSERT_TRUE(r.exact) << "timing-only ops:" << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_GE(r.error, 0);
  EXPECT_LT(r.error, tolerance);
}

}  // namespace tpusim::testing
