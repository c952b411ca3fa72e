// One matrix unit: a 128x128 weight-stationary systolic array with two weight staging
// buffers and an f32 accumulator (result) buffer. Three paths overlap: weight loading,
// LHS streaming and result popping; each keeps its own timeline (docs/isa.md, Timing).
#pragma once

#include <vector>

#include "sim/unit.h"

namespace tpusim::sim {

inline constexpr int kTile = 128;  // weight tile edge; LHS rows are kTile bf16 wide

class MxuUnit : public Unit {
 public:
  MxuUnit(sc_core::sc_module_name name, CoreContext& ctx, int index);

 protected:
  TimeFs Execute(const Issued& it, TimeFs earliest) override;

 private:
  TimeFs LoadWeights(const Issued& it, TimeFs earliest);
  TimeFs Matmul(const Issued& it, TimeFs earliest);
  TimeFs Pop(const Issued& it, TimeFs earliest);
  uint64_t CheckedVmem(const Issued& it, int64_t addr, uint64_t bytes);
  void CheckAccRows(const Issued& it, int64_t first, int64_t rows);

  // Timelines (femtoseconds).
  TimeFs weight_path_free_ = 0, staging_free_ = 0, staged_ready_ = 0;
  TimeFs stream_free_ = 0, pop_free_ = 0;
  bool has_staged_ = false, has_active_ = false;
  std::vector<TimeFs> acc_ready_;  // per block of 8 accumulator rows: results written
  std::vector<TimeFs> acc_free_;   // per block: last pop of its results finished

  // Values (functional mode only): weights as f32 W[k][n], accumulators acc[row][n].
  std::vector<float> staged_, active_, acc_;
};

}  // namespace tpusim::sim
