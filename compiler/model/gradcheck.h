// Checks the gradients autodiff builds against central finite differences, evaluated by the
// host reference evaluator (compiler/eval). Used by the tests; meant for f64 graphs at tiny
// sizes, where the evaluator computes in double and tolerances can be tight.
#pragma once

#include <string>
#include <vector>

#include "compiler/eval/value.h"
#include "compiler/hlo/status.h"
#include "compiler/model/builder.h"

namespace tpusim::model {

struct GradCheckOptions {
  int64_t entries_per_parameter = 8;  // checked entries: first to last evenly (one: the middle)
  double step = 1e-5;                 // central difference step h: (f(x+h) - f(x-h)) / 2h
  double tolerance = 1e-6;            // on |analytic - numeric| / max(1, |numeric|)
};

// Emits `loss` alone and (loss, Gradients(loss, wrt)...) as modules of `builder`, parses,
// verifies and evaluates them with `args` (one per builder parameter), and compares each
// checked entry. `wrt` must be parameters. Returns an error naming the worst entry.
hlo::Status CheckGradients(Builder& builder, Op loss, const std::vector<Op>& wrt,
                           const std::vector<eval::Value>& args,
                           const GradCheckOptions& options = {});

// Random arguments (eval::Value::Random, seeded by position) for every parameter of `builder`.
std::vector<eval::Value> RandomArguments(const Builder& builder, uint64_t seed);

}  // namespace tpusim::model
