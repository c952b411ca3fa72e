// The check of simulated values against the reference evaluator, step by step. Each step's
// reference starts from the state the simulated board left after the step before (its
// donated outputs: weights, optimizer state), so a step's error is that step's own and not
// the divergence two chaotic trajectories build up (docs/evaluator.md, "Comparing
// training steps").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/compile.h"
#include "compiler/eval/value.h"
#include "sim/simulation.h"

namespace tpusim::driver {

struct ValueCheck {
  int step = 0;      // from 0
  double error = 0;  // largest |simulated - reference| over every result / largest |reference|
  // The result whose own relative error is largest: its index, the root operand it comes
  // from (empty for a non-tuple root) and its largest |simulated - reference| / |reference|.
  size_t worst_output = 0;
  std::string worst_output_name;
  double worst_output_error = 0;
  // Output 0 when it is a scalar (a training step's loss), on core 0 and in the reference.
  bool has_output0 = false;
  double simulated_output0 = 0, reference_output0 = 0;
};

class StepCheck {
 public:
  // `args` are the evaluator's arguments of the first step (LoadInputs).
  StepCheck(const CompiledModule& compiled, std::vector<eval::Value> args, int steps);
  ~StepCheck();
  // Outputs written over their parameters (donated): the next step reads them.
  int fed_back() const { return static_cast<int>(fed_back_.size()); }
  // Core `core` has finished step `step` with every unit drained: reads its results. Cheap
  // enough for a SystemC thread (RunOptions::on_core_step_end); no evaluation happens here.
  void OnCoreStepEnd(sim::Simulation& sim, int core, int step);
  // Outside SystemC threads (between slices, RunOptions::on_progress): evaluates the
  // references that became due and compares what waited for them.
  void Poll();
  // After the run: one check per step (only the last without donations, when every step
  // computes the same). Throws std::runtime_error when the evaluator fails.
  std::vector<ValueCheck> Finish();

 private:
  struct Snapshot;  // one core's results of one step, as bytes
  struct Reference;
  void Compare(const Snapshot& s, const Reference& ref);
  void FeedBack(const Snapshot& s);
  bool Checks(int core) const;
  const std::vector<eval::Value>& Want(const Reference& ref, int core) const;

  const CompiledModule& compiled_;
  int steps_, cores_, replicas_;
  bool mirrored_;
  // A sharded global program partitioned over the cores: every core checks its tile of
  // each result against the evaluator's global value (spmd/tiles.h).
  bool partitioned_ = false;
  int CheckedCores() const;
  std::vector<std::pair<size_t, size_t>> fed_back_;  // (output, argument)
  std::vector<std::vector<eval::Value>> inputs_;     // of the next reference, per replica
  std::vector<int> reported_;                        // cores that ended each step
  std::map<int, std::unique_ptr<Reference>> refs_;   // by step, while cores still compare
  std::vector<std::unique_ptr<Snapshot>> waiting_;   // ended before their reference existed
  int first_step_ = 0;                               // the first step checked
  int next_ref_ = 0;                                 // the step whose reference comes next
  std::vector<ValueCheck> checks_;                   // by step
  std::vector<double> scale_;                        // largest |reference| per step
};

// One step, after the run: the results every core holds now against the evaluator.
ValueCheck CompareWithEvaluator(sim::Simulation& sim, const CompiledModule& compiled,
                                std::vector<eval::Value> args);

// Element i of `bytes` holding elements of `type` as the compiled program stores them.
double Decode(hlo::PrimitiveType type, const uint8_t* bytes, int64_t i);

// Bytes of one element in HBM: bf16 2; u32, u64 and s64 their width, as their bits; every
// other type 4 (f32, s32, and the types the VPU holds as f32).
int64_t ElementBytes(hlo::PrimitiveType type);

}  // namespace tpusim::driver
