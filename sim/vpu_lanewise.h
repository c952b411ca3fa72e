// Lane-by-lane semantics of the VPU's rounding, conversion and 32-bit integer instructions
// (isa/opcodes.def): each element of vd from the same element of va and vb.
#pragma once

#include <array>
#include <cstdint>

#include "isa/isa.h"
#include "sim/vpu.h"

namespace tpusim::sim {

// Computes `op` into `d` when it is one of these instructions (d may alias a source);
// false, with `d` untouched, for any other opcode.
bool ComputeLanewise(isa::Opcode op, std::array<float, kVregElems>& d,
                     const std::array<float, kVregElems>& a,
                     const std::array<float, kVregElems>& b);

// XLA's f32 -> s32 convert: toward zero, saturating, NaN -> 0.
int32_t ConvertF32ToS32(float x);

}  // namespace tpusim::sim
