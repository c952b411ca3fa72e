// The pass interface of tpusim's compiler, in XLA's style: a pass has a name and runs over a
// module, reporting whether it changed the IR or why it failed.
#pragma once

#include <string_view>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"

namespace tpusim::passes {

class HloPass {
 public:
  virtual ~HloPass() = default;
  virtual std::string_view name() const = 0;
  // true when the module changed; a failed Status stops the pipeline.
  virtual hlo::Result<bool> Run(hlo::HloModule& module) = 0;
};

}  // namespace tpusim::passes
