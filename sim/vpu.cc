#include "sim/vpu.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "isa/bf16.h"
#include "sim/timing.h"
#include "sim/vpu_lanewise.h"

namespace tpusim::sim {

using isa::Opcode;

VpuUnit::VpuUnit(sc_core::sc_module_name name, CoreContext& ctx, int stream)
    : Unit(name, ctx, isa::Unit::kVpu, stream) {}

TimeFs VpuUnit::Execute(const Issued& it, TimeFs earliest) {
  const TimeFs start = std::max(earliest, free_at_);
  TimeFs end = start;
  double flops = 0;
  if (it.instr.op == Opcode::kVloop) {
    // The body trip after trip, software-pipelined over the VLIW bundle's vector slots: each
    // trip takes the cycles of its busiest slot class (VloopTripCycles); the values are those
    // of the body written out, without a queue entry or a record per instruction. Every trip
    // costs the same; a strided access stays in VMEM and aligned if its first, second and
    // last trips do.
    const int64_t trips = it.v[0];
    int64_t load_store = 0, other = 0;
    double trip_flops = 0;
    for (const Issued& b : *it.body) {
      const int64_t cycles = Run(b, 0, trip_flops, /*compute=*/false);
      (isa::Info(b.instr.op).timing == isa::TimingClass::kVpuLoadStore ? load_store : other) +=
          cycles;
      if (trips > 1) Run(b, 1, flops, /*compute=*/false);  // a stride off the alignment
      if (trips > 2) Run(b, trips - 1, flops, /*compute=*/false);
    }
    end += ctx_.Cycles(VloopTripCycles(*ctx_.cfg, load_store, other) * trips);
    flops = trip_flops * static_cast<double>(trips);
    if (ctx_.functional)
      for (int64_t trip = 0; trip < trips; ++trip)
        for (const Issued& b : *it.body) Compute(b, Address(b, trip));
  } else {
    end += ctx_.Cycles(Run(it, 0, flops));
  }
  free_at_ = end;
  ExtendDrain(end);
  ctx_.Record(id_, it, start, end, flops, 0);
  return start;
}

uint64_t VpuUnit::Address(const Issued& it, int64_t trip) {
  switch (it.instr.op) {
    case Opcode::kVlds:
    case Opcode::kVsts:
    case Opcode::kVldsBf16:
    case Opcode::kVstsBf16:
      return static_cast<uint64_t>(it.v[1] + trip * it.v[2] + it.vmem_base);
    default:
      return static_cast<uint64_t>(it.v[1] + it.vmem_base);
  }
}

int64_t VpuUnit::Run(const Issued& it, int64_t trip, double& flops, bool compute) {
  const isa::OpInfo& info = isa::Info(it.instr.op);
  if (it.instr.op == Opcode::kVxpose && (it.instr.a[0] % 16 || it.instr.a[1] % 16))
    ctx_.Fail(it, "vxpose needs register groups starting at v0 or v16");
  if (info.timing == isa::TimingClass::kVpuLoadStore) {
    CheckedVmem(it, static_cast<int64_t>(Address(it, trip)), VmemBytes(it.instr.op));
  } else {
    flops += kVregElems;
  }
  if (compute && ctx_.functional) Compute(it, Address(it, trip));
  return FixedCostCycles(*ctx_.cfg, info.timing);
}

uint64_t VpuUnit::VmemBytes(Opcode op) {
  return op == Opcode::kVldBf16 || op == Opcode::kVstBf16 || op == Opcode::kVldsBf16 ||
                 op == Opcode::kVstsBf16
             ? 2048
             : 4096;
}

uint64_t VpuUnit::CheckedVmem(const Issued& it, int64_t addr, uint64_t bytes) {
  if (addr < 0 || !ctx_.vmem->Contains(static_cast<uint64_t>(addr), bytes))
    ctx_.Fail(it, "VMEM address " + std::to_string(addr) + " + " + std::to_string(bytes) +
                      " bytes is outside VMEM");
  if (addr % kVmemAlign)
    ctx_.Fail(it, "VMEM address " + std::to_string(addr) + " is not " + std::to_string(kVmemAlign) +
                      "-byte aligned");
  return static_cast<uint64_t>(addr);
}

namespace {
template <typename F>
void Map1(std::array<float, kVregElems>& d, const std::array<float, kVregElems>& a, F f) {
  for (int i = 0; i < kVregElems; ++i) d[i] = f(a[i]);
}
template <typename F>
void Map2(std::array<float, kVregElems>& d, const std::array<float, kVregElems>& a,
          const std::array<float, kVregElems>& b, F f) {
  for (int i = 0; i < kVregElems; ++i) d[i] = f(a[i], b[i]);
}
// XLA's maximum and minimum: a NaN operand gives NaN (fmax/fmin would drop it); otherwise
// the larger (smaller) one, the second when they compare equal (max(-0, +0) = +0).
float MaxPropagatingNan(float x, float y) {
  return std::isnan(x) ? x : std::isnan(y) ? y : x > y ? x : y;
}
float MinPropagatingNan(float x, float y) {
  return std::isnan(x) ? x : std::isnan(y) ? y : x < y ? x : y;
}
}  // namespace

void VpuUnit::Compute(const Issued& it, uint64_t addr) {
  const auto& a = it.instr.a;
  auto& d = regs_[a[0]];
  // Elementwise ops read element i before writing it, so vd may alias a source; the
  // cross-lane ops below copy their sources first.
  // a[1], a[2] are immediates for some opcodes (vmovi's bits may be negative): the unsigned
  // remainder keeps these unused references inside the register file.
  const auto& va = regs_[static_cast<uint64_t>(a[1]) % isa::kNumVregs];
  const auto& vb = regs_[static_cast<uint64_t>(a[2]) % isa::kNumVregs];
  switch (it.instr.op) {
    case Opcode::kVld:
    case Opcode::kVlds:
      ctx_.vmem->Read(addr, d.data(), 4096);
      break;
    case Opcode::kVst:
    case Opcode::kVsts:
      ctx_.vmem->Write(addr, d.data(), 4096);
      break;
    case Opcode::kVldBf16:
    case Opcode::kVldsBf16: {
      std::array<uint16_t, kVregElems> raw;
      ctx_.vmem->Read(addr, raw.data(), 2048);
      for (int i = 0; i < kVregElems; ++i) d[i] = isa::Bf16ToF32(raw[i]);
      break;
    }
    case Opcode::kVstBf16:
    case Opcode::kVstsBf16: {
      std::array<uint16_t, kVregElems> raw;
      for (int i = 0; i < kVregElems; ++i) raw[i] = isa::F32ToBf16(d[i]);
      ctx_.vmem->Write(addr, raw.data(), 2048);
      break;
    }
    case Opcode::kVadd:
      Map2(d, va, vb, [](float x, float y) { return x + y; });
      break;
    case Opcode::kVsub:
      Map2(d, va, vb, [](float x, float y) { return x - y; });
      break;
    case Opcode::kVmul:
      Map2(d, va, vb, [](float x, float y) { return x * y; });
      break;
    case Opcode::kVdiv:
      Map2(d, va, vb, [](float x, float y) { return x / y; });
      break;
    case Opcode::kVmax:
      Map2(d, va, vb, MaxPropagatingNan);
      break;
    case Opcode::kVmin:
      Map2(d, va, vb, MinPropagatingNan);
      break;
    case Opcode::kVabs:
      Map1(d, va, [](float x) { return std::fabs(x); });
      break;
    case Opcode::kVneg:
      Map1(d, va, [](float x) { return -x; });
      break;
    case Opcode::kVexp:
      Map1(d, va, [](float x) { return std::exp(x); });
      break;
    case Opcode::kVlog:
      Map1(d, va, [](float x) { return std::log(x); });
      break;
    case Opcode::kVtanh:
      Map1(d, va, [](float x) { return std::tanh(x); });
      break;
    case Opcode::kVrsqrt:
      Map1(d, va, [](float x) { return 1.0f / std::sqrt(x); });
      break;
    case Opcode::kVsqrt:
      Map1(d, va, [](float x) { return std::sqrt(x); });
      break;
    case Opcode::kVcvtBf16:
      Map1(d, va, isa::RoundToBf16);
      break;
    case Opcode::kVaddS32:  // two's complement on the bit patterns: wraps
      Map2(d, va, vb, [](float x, float y) {
        return std::bit_cast<float>(std::bit_cast<uint32_t>(x) + std::bit_cast<uint32_t>(y));
      });
      break;
    case Opcode::kVsubS32:
      Map2(d, va, vb, [](float x, float y) {
        return std::bit_cast<float>(std::bit_cast<uint32_t>(x) - std::bit_cast<uint32_t>(y));
      });
      break;
    case Opcode::kVcvtF32S32:  // the conversion rounds to nearest even (the default mode)
      Map1(d, va, [](float x) { return static_cast<float>(std::bit_cast<int32_t>(x)); });
      break;
    case Opcode::kVxorU32:
      Map2(d, va, vb, [](float x, float y) {
        return std::bit_cast<float>(std::bit_cast<uint32_t>(x) ^ std::bit_cast<uint32_t>(y));
      });
      break;
    case Opcode::kVshrU32: {
      const int shift = a[2] & 31;
      Map1(d, va,
           [shift](float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) >> shift); });
      break;
    }
    case Opcode::kVmulU32:
      Map2(d, va, vb, [](float x, float y) {
        return std::bit_cast<float>(std::bit_cast<uint32_t>(x) * std::bit_cast<uint32_t>(y));
      });
      break;
    case Opcode::kVcmpLt:
      Map2(d, va, vb, [](float x, float y) { return x < y ? 1.f : 0.f; });
      break;
    case Opcode::kVcmpLe:
      Map2(d, va, vb, [](float x, float y) { return x <= y ? 1.f : 0.f; });
      break;
    case Opcode::kVcmpEq:
      Map2(d, va, vb, [](float x, float y) { return x == y ? 1.f : 0.f; });
      break;
    case Opcode::kVcmpNe:
      Map2(d, va, vb, [](float x, float y) { return x != y ? 1.f : 0.f; });
      break;
    case Opcode::kVsel: {
      const auto& vc = regs_[a[3]];
      for (int i = 0; i < kVregElems; ++i) d[i] = va[i] != 0 ? vb[i] : vc[i];
      break;
    }
    case Opcode::kVbcast:
      d.fill(std::bit_cast<float>(static_cast<uint32_t>(it.v[1])));
      break;
    case Opcode::kVmovi:
      d.fill(std::bit_cast<float>(a[1]));
      break;
    case Opcode::kVredsubSum:
    case Opcode::kVredsubMax: {
      const auto src = va;
      bool sum = it.instr.op == Opcode::kVredsubSum;
      for (int l = 0; l < kLanes; ++l) {
        float acc = src[l];
        for (int s = 1; s < kSublanes; ++s)
          acc = sum ? acc + src[s * kLanes + l] : MaxPropagatingNan(acc, src[s * kLanes + l]);
        for (int s = 0; s < kSublanes; ++s) d[s * kLanes + l] = acc;
      }
      break;
    }
    case Opcode::kVredlaneSum:
    case Opcode::kVredlaneMax: {
      const auto src = va;
      bool sum = it.instr.op == Opcode::kVredlaneSum;
      for (int s = 0; s < kSublanes; ++s) {
        float acc = src[s * kLanes];
        for (int l = 1; l < kLanes; ++l)
          acc = sum ? acc + src[s * kLanes + l] : MaxPropagatingNan(acc, src[s * kLanes + l]);
        std::fill_n(d.begin() + s * kLanes, kLanes, acc);
      }
      break;
    }
    case Opcode::kVperm: {
      const auto src = va, idx_reg = vb;
      for (int s = 0; s < kSublanes; ++s)
        for (int l = 0; l < kLanes; ++l) {
          int idx = static_cast<int>(idx_reg[s * kLanes + l]);
          d[s * kLanes + l] = src[s * kLanes + (((idx % kLanes) + kLanes) % kLanes)];
        }
      break;
    }
    case Opcode::kVrot: {
      const auto src = va;
      int k = ((a[2] % kLanes) + kLanes) % kLanes;
      for (int s = 0; s < kSublanes; ++s)
        for (int l = 0; l < kLanes; ++l)
          d[s * kLanes + l] = src[s * kLanes + (l - k + kLanes) % kLanes];
      break;
    }
    case Opcode::kVxpose: {
      // Element (r, c) of the 128x128 block lives in register base + r/8, sublane r%8, lane c.
      std::array<float, 128 * 128> block;
      for (int r = 0; r < 128; ++r)
        for (int c = 0; c < 128; ++c) block[c * 128 + r] = regs_[a[1] + r / 8][(r % 8) * 128 + c];
      for (int r = 0; r < 128; ++r)
        std::memcpy(&regs_[a[0] + r / 8][(r % 8) * 128], &block[r * 128], 128 * sizeof(float));
      break;
    }
    default:
      if (!ComputeLanewise(it.instr.op, d, va, vb)) ctx_.Fail(it, "not a VPU instruction");
  }
}

}  // namespace tpusim::sim
