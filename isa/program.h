// A decoded ISA program: instructions, DMA descriptors and the provenance tags (HLO op
// names) that let the profiler attribute time without knowing the compiler.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/isa.h"

namespace tpusim::isa {

struct Instr {
  Opcode op = Opcode::kNop;
  // Operand values in the order of the opcode's operand letters. Registers, flags,
  // units and MXUs hold their index; a label its target instruction index; an f32
  // immediate its bit pattern.
  std::array<int32_t, kMaxOperands> a{};
  uint16_t tag = 0;  // index into Program::tags; 0 is the untagged entry ""
  bool operator==(const Instr&) const = default;
};

// A strided copy of planes x rows x row_bytes bytes. Byte (p, r, b) moves from
// src + p*src_plane_stride + r*src_stride + b to dst + p*dst_plane_stride + r*dst_stride + b.
struct DmaDesc {
  std::string name;
  uint32_t rows = 1;
  uint32_t row_bytes = 0;
  int64_t src_stride = 0;
  int64_t dst_stride = 0;
  uint32_t planes = 1;
  int64_t src_plane_stride = 0;
  int64_t dst_plane_stride = 0;
  uint64_t bytes() const { return uint64_t{planes} * rows * row_bytes; }
  bool operator==(const DmaDesc&) const = default;
};

struct Program {
  std::vector<Instr> code;
  std::vector<DmaDesc> descs;
  std::vector<std::string> tags{""};  // tags[0] is "", the untagged entry
  // Where the core's collective stream starts (docs/isa.md, "Two instruction streams"):
  // a second sequencer runs code from here to its own halt, with DMA and VPU queues and
  // sync flags of its own. Unset: the core runs one stream, from instruction 0.
  std::optional<uint32_t> collective_entry;
  bool operator==(const Program&) const = default;
};

}  // namespace tpusim::isa
