// Programs shared by the ISA tests: one that uses every opcode with varied operands.
#pragma once

#include <cstdint>

#include "isa/isa.h"
#include "isa/program.h"

namespace tpusim::isa::testing {

// Every opcode in table order (twice, with different operands), two descriptors and
// three tags; labels point backwards, forwards and at the end of the program.
inline Program EveryOpcodeProgram() {
  Program p;
  p.descs.push_back({"tileA", 8, 512, 4096, 512});
  p.descs.push_back({"planes.x", 16, 256, -128, 1024, 3, 1 << 20, -(int64_t{1} << 40)});
  p.tags = {"", "fusion.1", "dot \"q\"\\\x01"};
  static constexpr int32_t kImms[] = {0, -1, INT32_MIN, INT32_MAX, 16, -16, 0x1000};
  static constexpr uint32_t kFloats[] = {0x3fc00000, 0x80000000, 0x00000001, 0x7f7fffff,
                                         0x7fc00000, 0x7f800001, 0xff800000, 0x3dcccccd};
  const int n = 2 * kNumOpcodes;
  for (int k = 0; k < n; ++k) {
    Instr in;
    in.op = static_cast<Opcode>(k % kNumOpcodes);
    in.tag = static_cast<uint16_t>(k / 10 % 3);
    const OpInfo& info = Info(in.op);
    for (int i = 0; i < info.num_operands(); ++i) {
      int32_t& a = in.a[i];
      switch (info.operand(i)) {
        case OperandKind::kSreg:
        case OperandKind::kVreg:
        case OperandKind::kFlag:
          a = (k * 7 + i * 13) % 32;
          break;
        case OperandKind::kUnit:
          a = (k + i) % kNumUnits;
          break;
        case OperandKind::kMxu:
          a = k % kMaxMxus;
          break;
        case OperandKind::kImm:
          a = kImms[(k + i) % 7];
          break;
        case OperandKind::kLabel:
          a = (k * 5) % (n + 1);
          break;
        case OperandKind::kDesc:
          a = k % 2;
          break;
        case OperandKind::kFimm:
          a = static_cast<int32_t>(kFloats[k % 8]);
          break;
      }
    }
    p.code.push_back(in);
  }
  Instr jmp;  // a branch to the end of the program
  jmp.op = Opcode::kJmp;
  jmp.a[0] = n + 1;
  p.code.push_back(jmp);
  return p;
}

}  // namespace tpusim::isa::testing
