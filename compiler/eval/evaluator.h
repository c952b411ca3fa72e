// The host reference evaluator: a plain interpreter of an HLO module, used to check the
// results of compiled and simulated programs. See docs/evaluator.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/eval/value.h"
#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"

namespace tpusim::eval {

using hlo::Result;
using hlo::Status;

struct EvalOptions {
  uint64_t rng_seed = 0;                   // rng and rng-bit-generator draw from this
  int64_t max_while_iterations = 1 << 24;  // a while loop running longer is an error
};

// Whether the evaluator implements `op` (every opcode the parser accepts does).
bool IsEvaluatorSupported(hlo::Opcode op);

// Evaluates the entry computation of `module` as a single replica (replica 0 of 1).
// The result is the root value with a top-level tuple flattened: a root tuple of N
// elements gives N values (nested tuples stay tuple Values), an array root gives one.
// Errors name the instruction: "%dot.3: ...".
Result<std::vector<Value>> Evaluate(const hlo::HloModule& module, const std::vector<Value>& args,
                                    const EvalOptions& options = {});

// Parses HLO text (hlo::ParseHlo) and evaluates it as above; parse errors come back too.
Result<std::vector<Value>> EvaluateText(std::string_view hlo_text, const std::vector<Value>& args,
                                        const EvalOptions& options = {});

// Evaluates every replica of `module` (one per entry of `per_replica_args`, normally
// module.replica_count), each on its own thread, meeting at collectives. Returns each
// replica's flattened result, as Evaluate.
Result<std::vector<std::vector<Value>>> EvaluateReplicated(
    const hlo::HloModule& module, const std::vector<std::vector<Value>>& per_replica_args,
    const EvalOptions& options = {});

// Why replicas given the same arguments could end with different values: the first op that
// gives each replica its own value (reduce-scatter, rng, a collective-permute or replica
// groups that treat replicas differently), named; nullopt when every replica computes the same.
std::optional<std::string> MirrorObstacle(const hlo::HloModule& module, int64_t replicas);

// Evaluates `replicas` replicas that all receive `args` as one interpreter: the result of
// every replica, equal to each of EvaluateReplicated's with the same arguments (collectives
// fold the one value once per group member, in group order), in 1/replicas of the memory
// and time. An error names the MirrorObstacle when there is one.
Result<std::vector<Value>> EvaluateMirrored(const hlo::HloModule& module,
                                            const std::vector<Value>& args, int64_t replicas,
                                            const EvalOptions& options = {});

}  // namespace tpusim::eval
