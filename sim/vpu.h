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
  VpuUnit(sc_core::sc_module_name name, CoreContext& ctx, int stream = 0);
  const std::array<float, kVregElems>& vreg(int i) const { return regs_[i]; }

 protected:
  TimeFs Execute(const Issued& it, TimeFs earliest) override;

 private:
  // Checks one instruction at `trip` of an enclosing vloop, adds its flops, computes its
  // values when `compute`; returns its duration.
  // Checks and (with `compute`) executes one instruction; returns its busy cycles.
  int64_t Run(const Issued& it, int64_t trip, double& flops, bool compute = true);
  // The VMEM address a load or store touches on `trip` (strided forms advance per trip).
  static uint64_t Address(const Issued& it, int64_t trip);
  // Computes the values of one instruction; `addr` is its VMEM address (loads and stores).
  void Compute(const Issued& it, uint64_t addr);
  static uint64_t VmemBytes(isa::Opcode op);
  uint64_t CheckedVmem(const Issued& it, int64_t addr, uint64_t bytes);

  TimeFs free_at_ = 0;
  std::array<std::array<float, kVregElems>, isa::kNumVregs> regs_{};
};

}  // namespace tpusim::sim
