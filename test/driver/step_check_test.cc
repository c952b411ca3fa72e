// The step-by-step value check of `tpusim run` (driver/step_check.h): each step's reference
// starts from the state the simulated board left after the step before. A module that
// updates its weight in place runs two steps; the test changes the weight every core holds
// at the end of step 1, before the check reads it. Step 1 then differs from its reference,
// and step 2, evaluated from the changed state, matches: the check follows the simulated
// trajectory instead of its own.
#include <gtest/gtest.h>

#include "driver/board_target.h"
#include "driver/run_values.h"
#include "driver/step_check.h"
#include "isa/assembler.h"
#include "sim/config.h"
#include "sim/simulation.h"

namespace tpusim {
namespace {

// loss = sum(w * x); w' = w - 0.5 x, written over w (donated).
constexpr char kStep[] =
    R"(HloModule step, replica_count=8, input_output_alias={ {1}: (0, {}, may-alias) }

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (w: f32[8,128], x: f32[8,128]) -> (f32[], f32[8,128]) {
  %w = f32[8,128]{1,0} parameter(0)
  %x = f32[8,128]{1,0} parameter(1)
  %p = f32[8,128]{1,0} multiply(%w, %x)
  %zero = f32[] constant(0)
  %loss = f32[] reduce(%p, %zero), dimensions={0,1}, to_apply=%add
  %half = f32[] constant(0.5)
  %lr = f32[8,128]{1,0} broadcast(%half), dimensions={}
  %dw = f32[8,128]{1,0} multiply(%lr, %x)
  %w2 = f32[8,128]{1,0} subtract(%w, %dw)
  ROOT %t = (f32[], f32[8,128]{1,0}) tuple(%loss, %w2)
})";

TEST(StepCheck, EachStepStartsFromTheSimulatedStateOfTheStepBefore) {
  const sim::BoardConfig board = sim::LoadConfig("v3-8");
  auto compiled = CompileForBoard(kStep, "step.hlo", driver::TargetFor(board, /*infeed=*/false));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  const CompiledModule& c = *compiled.value();
  ASSERT_TRUE(c.lowered.exact);
  const uint64_t w_address = c.lowered.outputs.at(1).address;

  std::unique_ptr<driver::StepCheck> check;
  sim::Simulation* simulation = nullptr;
  sim::RunOptions options{.functional = true};
  options.on_progress = [&](const sim::RunProgress&) { check->Poll(); };
  options.on_core_step_end = [&](int core, int step) {
    if (step == 0) {  // the new weight's first element gains 1 on every core
      float w0;
      simulation->core(core).hbm().Read(w_address, reinterpret_cast<uint8_t*>(&w0), 4);
      w0 += 1.0f;
      simulation->core(core).hbm().Write(w_address, reinterpret_cast<const uint8_t*>(&w0), 4);
    }
    check->OnCoreStepEnd(*simulation, core, step);
  };
  sim::Simulation sim(board, options);
  simulation = &sim;
  for (const isa::Program& program : driver::AssembleCores(c.lowered, "step.hlo"))
    sim.AddCore(program);
  sim::TrainingLoop loop;
  loop.steps = 2;
  sim.SetTrainingLoop(loop);
  check = std::make_unique<driver::StepCheck>(c, driver::LoadInputs(sim, c, /*seed=*/1), 2);
  EXPECT_EQ(check->fed_back(), 1);
  ASSERT_TRUE(sim.Run().ok);
  const std::vector<driver::ValueCheck> steps = check->Finish();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_GT(steps[0].error, 1e-3);  // an error of 1 against results below 1
  EXPECT_EQ(steps[0].worst_output, 1u);
  EXPECT_EQ(steps[0].worst_output_name, "%w2");
  EXPECT_LT(steps[1].error, 1e-6);
  ASSERT_TRUE(steps[1].has_output0);
  EXPECT_NEAR(steps[1].simulated_output0, steps[1].reference_output0,
              1e-6 * std::fabs(steps[1].reference_output0));
}

}  // namespace
}  // namespace tpusim
