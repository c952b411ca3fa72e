// Prints a Builder's graph as an HLO module in XLA's text syntax, which hlo::ParseHlo reads
// and hlo::VerifyModule accepts. Output is deterministic: the same graph gives the same bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/model/builder.h"

namespace tpusim::model {

struct ModuleOptions {
  int64_t replica_count = 1;  // > 1 adds replica_count=N to the header
  // (output tuple index, parameter number): the output may reuse the parameter's buffer,
  // written as the header's input_output_alias (as jax.jit's donate_argnums does).
  std::vector<std::pair<int64_t, int64_t>> donations;
};

// The module `builder.name()` whose ENTRY computation has every parameter of the builder and
// the instructions `root` depends on, `root` last. Reducer computations (%sum.f32, %max.f32,
// %ge.f32) come first, in the order they are first needed.
std::string EmitModule(const Builder& builder, Op root, const ModuleOptions& options = {});

// Shape text with XLA's default layout: "f32[2,3]{1,0}", "f32[]", "(f32[], s32[4]{0})".
std::string ShapeWithLayout(const Shape& shape);

}  // namespace tpusim::model
