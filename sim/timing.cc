#include "sim/timing.h"

namespace tpusim::sim {

int64_t PopCycles(const CoreConfig& c, int64_t rows) {
  return (rows + c.mxu_pop_rows_per_cycle - 1) / c.mxu_pop_rows_per_cycle;
}

double DmaAloneFs(const CoreConfig& c, uint64_t bytes, double bytes_per_s) {
  return static_cast<double>(CyclesToFs(c, c.dma_latency_cycles)) + BytesToFs(bytes, bytes_per_s);
}

}  // namespace tpusim::sim
