// The compiler's target for a simulated board: its cores, MXUs, HBM and collective ring.
#pragma once

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/compile.h"
#include "sim/config.h"

namespace tpusim::cli {

inline CompileTarget TargetFor(const sim::BoardConfig& board, bool infeed = true) {
  CompileTarget t;
  t.lowering.cores = board.cores();
  t.lowering.mxus_per_core = board.core.mxus;
  t.lowering.ring =
      collectives::TorusRing(board.ici.torus_x, board.ici.torus_y, board.cores_per_chip);
  t.lowering.infeed = infeed;
  t.lowering.hbm_bytes = board.core.hbm_bytes;
  // Memory planning leaves the top of HBM to the collectives' entry handshake.
  t.hbm_bytes_per_core = static_cast<int64_t>(board.core.hbm_bytes - lowering::kMailboxBytes);
  return t;
}

}  // namespace tpusim::cli
