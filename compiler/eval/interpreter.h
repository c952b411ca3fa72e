// Internals of the evaluator: the per-replica interpreter and the opcode dispatch table
// the op families (ops_*.cc) fill in.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/eval/evaluator.h"
#include "compiler/eval/lifetimes.h"
#include "compiler/eval/rendezvous.h"
#include "compiler/eval/scalar_program.h"

namespace tpusim::eval {

class Interpreter;

using Operands = std::span<const Value* const>;
using OpFn = Result<Value> (*)(const hlo::HloInstruction&, Operands, Interpreter&);
using OpTable = std::array<OpFn, static_cast<size_t>(hlo::Opcode::kCount)>;

// Each op family registers its opcodes.
void RegisterSources(OpTable& table);
void RegisterElementwise(OpTable& table);
void RegisterDataMovement(OpTable& table);
void RegisterGatherScatter(OpTable& table);
void RegisterSort(OpTable& table);
void RegisterReductions(OpTable& table);
void RegisterContractions(OpTable& table);
void RegisterBatchNorm(OpTable& table);
void RegisterControl(OpTable& table);
void RegisterCollectives(OpTable& table);
void RegisterShardingCalls(OpTable& table);  // ops_sharding.cc

// "%name: message".
Status InstrError(const hlo::HloInstruction& instr, const std::string& message);

class Interpreter {
 public:
  Interpreter(const hlo::HloModule& module, const EvalOptions& options, int64_t replica_id,
              int64_t replica_count, Rendezvous* rendezvous);
  // Evaluates `comp` on `args` (one per parameter) and returns its root value.
  Result<Value> Call(const hlo::HloComputation& comp, std::span<const Value> args);
  // Applies a computation on scalars (reducers, comparators) to scalars of `types`;
  // returns the root's elements (one for an array root). Runs a ScalarProgram when the
  // computation has one, building no Values.
  Result<std::vector<double>> CallScalar(const hlo::HloComputation& comp,
                                         std::span<const double> args,
                                         std::span<const PrimitiveType> types);
  // The same into `results` (as many as the root has elements), without allocating when
  // the computation has a ScalarProgram: what reducers call once per element.
  Status CallScalar(const hlo::HloComputation& comp, std::span<const double> args,
                    std::span<const PrimitiveType> types, std::span<double> results);
  // Sends `v` to every replica and returns all replicas' values, by replica id.
  Result<Exchanged> Exchange(const hlo::HloInstruction& instr, Value v);

  const EvalOptions& options() const { return options_; }
  const hlo::HloModule& module() const { return module_; }
  int64_t replica_id() const { return replica_id_; }
  int64_t replica_count() const { return replica_count_; }
  // Devices are numbered replica * num_partitions + partition (XLA's global device ids).
  int64_t num_partitions() const { return module_.num_partitions; }
  // How many times `rng` ran before in this evaluation (its draw's key, counter_rng.h).
  uint64_t RngExecution(const hlo::HloInstruction& rng) { return rng_executions_[&rng]++; }

 private:
  const Lifetimes& Plan(const hlo::HloComputation& comp);  // computed once per computation
  bool TryMove(const hlo::HloInstruction& instr, size_t i, const Lifetimes& life,
               std::vector<Value>& values, const std::vector<const Value*>& slots, Value& out);

  const hlo::HloModule& module_;
  EvalOptions options_;
  int64_t replica_id_, replica_count_;
  Rendezvous* rendezvous_;
  std::unordered_map<const hlo::HloInstruction*, uint64_t> rng_executions_;
  std::unordered_map<const hlo::HloInstruction*, size_t> local_index_;
  std::unordered_map<const hlo::HloComputation*, Lifetimes> lifetimes_;
  // Built once per computation; null where the computation has none.
  std::unordered_map<const hlo::HloComputation*, std::unique_ptr<ScalarProgram>> scalar_;
};

// Scalar kernels shared by families (ops_elementwise.cc). `type` is the operand type.
Result<double> UnaryScalar(hlo::Opcode op, PrimitiveType type, double x);
// For kCompare, `direction` is "EQ", "NE", "LT", "LE", "GT" or "GE"; `total_order`
// (compare's type=TOTALORDER, what JAX's sort comparators use) orders floating-point values
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
Result<double> BinaryScalar(hlo::Opcode op, PrimitiveType type, double a, double b,
                            const std::string& direction = "", bool total_order = false);

}  // namespace tpusim::eval
