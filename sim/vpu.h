// The vector unit: 32 registers of f32[8,128], one instruction at a time in order.
#pragma once

#include <array>

#include "sim/unit.h"

namespace tpusim::sim {

inline constexpr int kSublanes = 8;
inline constexpr int kLanes = 128;
inline constexpr int kVregElems = kSublanes * kLanes;
// VMEM operands of vector and matrix instructions must be aligned to this many bytes.
inline constexpr uint64_t kVmemAlign = 256;

class VpuUnit : public Unit {
 public:
  VpuUnit(sc_core::sc_module_name name, CoreContext& ctx);
  const std::array<float, kVregElems>& vreg(int i) const { return regs_[i]; }

 protected:
  TimeFs Execute(const Issued& it, TimeFs earliest) override;

 private:
  void Compute(const Issued& it);
  uint64_t CheckedVmem(const Issued& it, int64_t addr, uint64_t bytes);

  TimeFs free_at_ = 0;
  std::array<std::array<float, kVregElems>, isa::kNumVregs> regs_{};
};

}  // namespace tpusim::sim
