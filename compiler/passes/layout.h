// TPU layout assignment: every array shape gets a tiled layout the way XLA's TPU backend lays
// arrays out in HBM, and each instruction's padding (tiled bytes vs logical bytes) is reported.
//
// Rule (DESIGN.md section 2): minor_to_major descending unless the shape already has one;
// rank >= 2 arrays get (R,128) tiles over their two most minor dimensions, where R is 8, or
// 4 / 2 when the second-minor dimension has at most 4 / 2 elements; 16-bit types add the
// (2,1) sub-tile (two rows packed per 32-bit word) and 8-bit types (4,1). Rank-1 arrays get
// T(128). Scalars and layouts that already have tiles are left alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/passes/pass.h"

namespace tpusim::passes {

// The TPU layout for an array shape of rank >= 1, keeping its minor_to_major if it has one.
hlo::Layout TpuLayout(const hlo::Shape& array);
// Bytes of the values alone; tuples sum their elements.
int64_t LogicalBytes(const hlo::Shape& shape);
// Bytes in HBM with the first tile of the layout applied (each tiled dimension rounded up to
// the tile); logical bytes for untiled shapes; tuples sum their elements.
int64_t PaddedBytes(const hlo::Shape& shape);

struct PaddingEntry {
  std::string computation;
  std::string name;   // instruction name, without '%'
  std::string shape;  // with its layout
  int64_t logical_bytes = 0;
  int64_t padded_bytes = 0;
  double waste_percent = 0;  // (padded - logical) / padded * 100
};

struct PaddingReport {
  std::vector<PaddingEntry> ops;  // every instruction, in module order
  int64_t logical_bytes = 0;      // totals over `ops`
  int64_t padded_bytes = 0;
  const PaddingEntry* Find(const std::string& name) const;  // first match
};

// Padding of every instruction of `module` with the layouts it has now.
PaddingReport ComputePaddingReport(const hlo::HloModule& module);

class LayoutAssignmentPass : public HloPass {
 public:
  std::string_view name() const override { return "layout-assignment"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;
  // Filled by Run.
  const PaddingReport& padding_report() const { return report_; }

 private:
  PaddingReport report_;
};

}  // namespace tpusim::passes
