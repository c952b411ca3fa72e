#include "isa/encoding.h"

#include <gtest/gtest.h>

#include <cstring>

#include "isa/assembler.h"
#include "test/isa/test_programs.h"

namespace tpusim::isa {
namespace {

// The low 64 bits of an encoded instruction (the high word must be zero here).
uint64_t Low(const Instr& in) {
  auto b = EncodeInstr(in);
  uint64_t lo = 0, hi = 0;
  std::memcpy(&lo, b.data(), 8);
  std::memcpy(&hi, b.data() + 8, 8);
  EXPECT_EQ(hi, 0u);
  return lo;
}

Instr One(std::string_view text) {
  Result<Program> p = Assemble(text);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p->code.at(0);
}

TEST(Encoding, HandComputedPatterns) {
  // add = opcode 3; r1 at bit 8, r2 at bit 13, r3 at bit 18.
  EXPECT_EQ(Low(One("add r1, r2, r3")), 0x3u | 1u << 8 | 2u << 13 | 3u << 18);
  EXPECT_EQ(Low(One("add r1, r2, r3")), 0xC4103u);
  // li = opcode 1; r4 at bit 8; -16 = 0xfffffff0 at bit 13.
  EXPECT_EQ(Low(One("li r4, -16")), 0x1FFFFFFE0401u);
  EXPECT_EQ(Low(One("li r4, 0x1000")), 0x1u | 4u << 8 | uint64_t{0x1000} << 13);
  // wait = opcode 26; unit mxu0 = 2 (3 bits) at 8, f3 at 11, imm 1 at 16.
  EXPECT_EQ(Low(One("wait mxu0, f3, 1")), 0x11A1Au);
  // vmovi: v2 at 8, 1.5f = 0x3fc00000 at 13.
  EXPECT_EQ(Low(One("vmovi v2, 1.5")),
            static_cast<uint64_t>(Opcode::kVmovi) | 2u << 8 | uint64_t{0x3fc00000} << 13);
  // mxu.mm: m1 (2 bits) at 8, r5 at 10, r6 at 15, r7 at 20.
  EXPECT_EQ(Low(One("mxu.mm m1, r5, r6, r7")),
            static_cast<uint64_t>(Opcode::kMxuMm) | 1u << 8 | 5u << 10 | 6u << 15 | 7u << 20);
}

TEST(Encoding, EveryOpcodeFitsIn128Bits) {
  for (const OpInfo& info : AllOps()) {
    int bits = 8;
    for (int i = 0; i < info.num_operands(); ++i) bits += OperandBits(info.operand(i));
    EXPECT_LE(bits, 128) << info.mnemonic;
  }
}

TEST(Encoding, ProgramRoundTrip) {
  Program p = testing::EveryOpcodeProgram();
  ASSERT_FALSE(Validate(p).has_value()) << Validate(p)->message;
  std::vector<uint8_t> bytes = EncodeProgram(p);
  Result<Program> q = DecodeProgram(bytes);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(*q, p);
  EXPECT_EQ(EncodeProgram(*q), bytes);
  for (const Instr& in : p.code) {
    Result<Instr> d = DecodeInstr(EncodeInstr(in));
    ASSERT_TRUE(d.ok()) << d.error().message;
    Instr want = in;
    want.tag = 0;
    EXPECT_EQ(*d, want);
  }
}

TEST(Encoding, EmptyProgram) {
  Program p;
  std::vector<uint8_t> bytes = EncodeProgram(p);
  EXPECT_EQ(bytes.size(), 8u + 12u + 4u);
  Result<Program> q = DecodeProgram(bytes);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(*q, p);
}

TEST(Encoding, ACollectiveEntryOutsideTheCodeIsRejected) {
  Program p;
  p.code = {{Opcode::kHalt, {}, 0}, {Opcode::kHalt, {}, 0}};
  p.collective_entry = 1;
  std::vector<uint8_t> bytes = EncodeProgram(p);
  ASSERT_TRUE(DecodeProgram(bytes).ok());
  bytes[20] = 2;  // the entry field, after the magic and three counts
  Result<Program> q = DecodeProgram(bytes);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().offset, 20u);
  p.collective_entry = 2;
  ASSERT_TRUE(Validate(p).has_value());
  EXPECT_EQ(Validate(p)->message, "offset 0: the collective entry 2 is not an instruction");
}

TEST(Encoding, EveryTruncationIsAnError) {
  std::vector<uint8_t> bytes = EncodeProgram(testing::EveryOpcodeProgram());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<Program> q = DecodeProgram(std::span(bytes.data(), n));
    EXPECT_FALSE(q.ok()) << "length " << n;
  }
  bytes.push_back(0);
  Result<Program> q = DecodeProgram(bytes);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().reason, "trailing bytes");
}

// Decodes `bytes` after `edit` and returns the error message ("" if it decoded).
template <class F>
std::string DecodeError(std::string_view text, F edit) {
  Result<Program> p = Assemble(text);
  EXPECT_TRUE(p.ok()) << p.error().message;
  std::vector<uint8_t> bytes = EncodeProgram(*p);
  edit(bytes);
  Result<Program> q = DecodeProgram(bytes);
  return q.ok() ? "" : q.error().message;
}

TEST(Encoding, DecoderErrors) {
  // Header 20 bytes, tags[0] 4 bytes, then the instructions start at 24 (no descs).
  EXPECT_EQ(DecodeError("nop", [](auto& b) { b[0] = 'X'; }),
            "offset 0: bad magic (expected \"TPUSIM01\" or \"TPUSIM02\")");
  EXPECT_EQ(DecodeError("nop", [](auto& b) { b[24] = 250; }), "offset 24: unknown opcode 250");
  EXPECT_EQ(DecodeError("nop", [](auto& b) { b[39] = 1; }), "offset 39: nonzero reserved bits");
  EXPECT_EQ(DecodeError("add r1, r2, r3", [](auto& b) { b[27] = 0x80; }),
            "offset 27: nonzero reserved bits");
  EXPECT_EQ(DecodeError("wait vpu, f1, 1", [](auto& b) { b[25] |= 7; }),
            "offset 25: unit index 7 out of range");
  EXPECT_EQ(DecodeError("x: jmp x", [](auto& b) { b[25] = 2; }),
            "offset 25: label 2 outside the program");
  EXPECT_EQ(DecodeError(".tag \"a\"\nnop", [](auto& b) { b[b.size() - 2] = 2; }),
            "offset 45: tag 2 out of range");
  EXPECT_EQ(DecodeError("nop", [](auto& b) { b[8] = 0; }), "offset 8: absurd tag count 0");
  EXPECT_EQ(DecodeError("nop", [](auto& b) { b[19] = 0x10; }),
            "offset 16: absurd instruction count 268435457");
  EXPECT_EQ(DecodeError("nop", [](auto& b) { b[13] = 1; }),
            "offset 12: absurd descriptor count 256");
  EXPECT_EQ(DecodeError(".desc A row_bytes=4\ndma.hv r1, r2, A, f0", [](auto& b) { b[29] = 0; }),
            "offset 24: descriptor 'A' has rows, row_bytes or planes 0");
  EXPECT_EQ(DecodeError(".desc A row_bytes=4\ndma.hv r1, r2, A, f0", [](auto& b) { b[53] = 0; }),
            "offset 24: descriptor 'A' has rows, row_bytes or planes 0");
}

TEST(Encoding, ValidateRejectsBadPrograms) {
  Program p;
  p.code.push_back({Opcode::kAdd, {1, 2, 40, 0}});
  ASSERT_TRUE(Validate(p).has_value());
  EXPECT_EQ(Validate(p)->reason, "instruction 0: register index 40 out of range");
  p.code[0] = {Opcode::kNop, {0, 0, 0, 1}};
  EXPECT_EQ(Validate(p)->reason, "instruction 0: unused operand 3 is not zero");
  p.code[0] = {Opcode::kNop, {}, 1};
  EXPECT_EQ(Validate(p)->reason, "instruction 0: tag out of range");
  p.code.clear();
  p.tags.push_back("");
  EXPECT_EQ(Validate(p)->reason, "duplicate tag \"\"");
}

}  // namespace
}  // namespace tpusim::isa
