// Lowering of an HLO module onto the ISA for a board of cores, data parallel: the batch
// (leading) dimension of the lhs is split evenly over the cores, the rhs is replicated.
// Today this lowers a module whose result is one 2-D dot of parameters (optionally through
// convert), onto the MXU kernel of matmul_kernel.h; any other module gets an error that
// names the op not lowered yet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"

namespace tpusim::lowering {

struct LoweredDot {
  std::string op;               // the dot's HLO name (instruction tag)
  int64_t m = 0, k = 0, n = 0;  // global shape; each core computes m / cores rows
  int cores = 0;
  int lhs_parameter = 0, rhs_parameter = 1;
  uint64_t lhs_address = 0, rhs_address = 0, out_address = 0;  // per core, in HBM
  std::vector<std::string> programs;                           // assembly, one per core
  double flops() const { return 2.0 * m * k * n; }
};

// infeed_flag >= 0: each step first waits for its input batch on that sync flag (the
// host's infeed, sim/host.h), which lands where the lhs rows live.
hlo::Result<LoweredDot> LowerDot(const hlo::HloModule& module, int cores, int infeed_flag = -1,
                                 int mxus_per_core = 2);

}  // namespace tpusim::lowering
