#include "isa/assembler.h"

#include <gtest/gtest.h>

#include <cstring>

#include "isa/disassembler.h"
#include "isa/encoding.h"
#include "test/isa/test_programs.h"

namespace tpusim::isa {
namespace {

Program Ok(std::string_view text) {
  Result<Program> p = Assemble(text, "k.s");
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? *p : Program{};
}

std::string Err(std::string_view text) {
  Result<Program> p = Assemble(text, "k.s");
  return p.ok() ? "(assembled)" : p.error().message;
}

TEST(Assembler, OperandsOfEveryKind) {
  Program p = Ok(R"(
    .desc tileA rows=8 row_bytes=512 src_stride=4096 dst_stride=512
    loop: add r1, r2, r3     # comment
    li r4, -16 ; another comment
    li r4, 0x1000
    li r5, 0xffffffff
    beq r1, r2, loop
    wait mxu0, f3, 1
    dma.hv r1, r2, tileA, f0
    mxu.mm m1, r5, r6, r7
    vmovi v2, 1.5
    vrot v1, v2, 3
  )");
  ASSERT_EQ(p.code.size(), 10u);
  EXPECT_EQ(p.code[0], (Instr{Opcode::kAdd, {1, 2, 3, 0}}));
  EXPECT_EQ(p.code[1], (Instr{Opcode::kLi, {4, -16, 0, 0}}));
  EXPECT_EQ(p.code[2], (Instr{Opcode::kLi, {4, 0x1000, 0, 0}}));
  EXPECT_EQ(p.code[3], (Instr{Opcode::kLi, {5, -1, 0, 0}}));
  EXPECT_EQ(p.code[4], (Instr{Opcode::kBeq, {1, 2, 0, 0}}));
  EXPECT_EQ(p.code[5], (Instr{Opcode::kWait, {2, 3, 1, 0}}));
  EXPECT_EQ(p.code[6], (Instr{Opcode::kDmaHv, {1, 2, 0, 0}}));
  EXPECT_EQ(p.code[7], (Instr{Opcode::kMxuMm, {1, 5, 6, 7}}));
  EXPECT_EQ(p.code[8], (Instr{Opcode::kVmovi, {2, 0x3fc00000, 0, 0}}));
  EXPECT_EQ(p.code[9], (Instr{Opcode::kVrot, {1, 2, 3, 0}}));
  ASSERT_EQ(p.descs.size(), 1u);
  EXPECT_EQ(p.descs[0], (DmaDesc{"tileA", 8, 512, 4096, 512}));
}

TEST(Assembler, LabelsDescsTagsEqu) {
  Program p = Ok(R"(.equ N 64
.equ NEG -3
.desc d row_bytes=N planes=2 src_plane_stride=-0x10 dst_plane_stride=9000000000
  jmp end
.tag "fusion.1"
top:
  addi r1, r1, NEG
.tag "dot.2"
  blt r1, r2, top
.tag ""
  li r3, N
.tag "fusion.1"
end: also.end: halt
)");
  ASSERT_EQ(p.code.size(), 5u);
  EXPECT_EQ(p.code[0].a[0], 4);  // forward reference
  EXPECT_EQ(p.code[2].a[2], 1);  // backward reference
  EXPECT_EQ(p.code[1].a[2], -3);
  EXPECT_EQ(p.code[3].a[1], 64);
  EXPECT_EQ(p.tags, (std::vector<std::string>{"", "fusion.1", "dot.2"}));
  std::vector<uint16_t> tags;
  for (const Instr& in : p.code) tags.push_back(in.tag);
  EXPECT_EQ(tags, (std::vector<uint16_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(p.descs[0], (DmaDesc{"d", 1, 64, 0, 0, 2, -16, 9000000000}));
}

TEST(Assembler, FloatImmediates) {
  auto bits = [](std::string_view s) { return ParseF32(s).value_or(0xdeadbeef); };
  EXPECT_EQ(bits("1.5"), 0x3fc00000u);
  EXPECT_EQ(bits("-2e-3"), 0xbb03126fu);
  EXPECT_EQ(bits("inf"), 0x7f800000u);
  EXPECT_EQ(bits("-inf"), 0xff800000u);
  EXPECT_EQ(bits("nan"), 0x7fc00000u);
  EXPECT_EQ(bits("f32:0x7f800001"), 0x7f800001u);
  EXPECT_EQ(bits("-0"), 0x80000000u);
  EXPECT_FALSE(ParseF32("1e39").has_value());
  EXPECT_FALSE(ParseF32("0x1p3").has_value());
  EXPECT_FALSE(ParseF32("f32:0x123456789").has_value());
  for (uint32_t b : {0x3dcccccdu, 0x00000001u, 0x7f7fffffu, 0x80000000u, 0x7fc00001u})
    EXPECT_EQ(ParseF32(FormatF32(b)), b) << FormatF32(b);
  EXPECT_EQ(FormatF32(0x3dcccccd), "0.1");
  EXPECT_EQ(FormatF32(0x7fc00001), "f32:0x7fc00001");
}

TEST(Assembler, ErrorsCarryFileLineColumn) {
  EXPECT_EQ(Err("nop\n  frob r1"), "k.s:2:3: unknown mnemonic 'frob'");
  EXPECT_EQ(Err("add r1, r2"), "k.s:1:1: 'add' expects 3 operands, got 2");
  EXPECT_EQ(Err("add r1, r2, r3, r4"), "k.s:1:17: 'add' expects 3 operands, got 4");
  EXPECT_EQ(Err("add r1, v3, r3"), "k.s:1:9: expected scalar register, got 'v3'");
  EXPECT_EQ(Err("add r1, r32, r3"), "k.s:1:9: scalar register out of range: 'r32'");
  EXPECT_EQ(Err("vadd v1, v2, v99"), "k.s:1:14: vector register out of range: 'v99'");
  EXPECT_EQ(Err("wait mxu9, f1, 1"),
            "k.s:1:6: expected unit (seq, dma, mxu0..mxu3, vpu), got 'mxu9'");
  EXPECT_EQ(Err("mxu.ldw m4, r1"), "k.s:1:9: mxu out of range: 'm4'");
  EXPECT_EQ(Err("\n\n   jmp nowhere"), "k.s:3:8: undefined label 'nowhere'");
  EXPECT_EQ(Err("a: nop\na: nop"), "k.s:2:1: duplicate label 'a'");
  EXPECT_EQ(Err("dma.hv r1, r2, tileB, f0"), "k.s:1:16: undefined descriptor 'tileB'");
  EXPECT_EQ(Err("li r1, 12abc"), "k.s:1:8: bad number '12abc'");
  EXPECT_EQ(Err("li r1, 2147483648"), "k.s:1:8: immediate out of range: '2147483648'");
  EXPECT_EQ(Err("li r1, -2147483649"), "k.s:1:8: immediate out of range: '-2147483649'");
  EXPECT_EQ(Err("li r1, 0x100000000"), "k.s:1:8: immediate out of range: '0x100000000'");
  EXPECT_EQ(Err("li r1, K"), "k.s:1:8: undefined constant 'K'");
  EXPECT_EQ(Err("vmovi v1, 1.5.2"), "k.s:1:11: expected f32 immediate, got '1.5.2'");
  EXPECT_EQ(Err(".desc A row_bytes=4 color=3"), "k.s:1:21: unknown .desc key 'color'");
  EXPECT_EQ(Err(".desc A rows=4"), "k.s:1:1: .desc 'A' needs row_bytes");
  EXPECT_EQ(Err(".desc A row_bytes=0"), "k.s:1:19: immediate out of range: '0'");
  EXPECT_EQ(Err(".desc A row_bytes=4\n.desc A row_bytes=4"), "k.s:2:7: duplicate descriptor 'A'");
  EXPECT_EQ(Err(".tag \"abc"), "k.s:1:6: unterminated string");
  EXPECT_EQ(Err(".tag abc"), "k.s:1:6: .tag expects one string");
  EXPECT_EQ(Err(".bogus 1"), "k.s:1:1: unknown directive '.bogus'");
  EXPECT_EQ(Err("add r1 r2, r3"), "k.s:1:8: expected ',', got 'r2'");
  EXPECT_EQ(Err("add r1, , r3"), "k.s:1:9: expected an operand, got ','");
  EXPECT_EQ(Err("add r1, r2, r3,"), "k.s:1:15: expected an operand");
  EXPECT_EQ(Err(".equ X 1\n.equ X 2"), "k.s:2:6: duplicate constant 'X'");
}

TEST(Assembler, GarbageNeverCrashes) {
  std::string junk;
  for (int i = 0; i < 4000; ++i) junk += static_cast<char>((i * 7919) % 256);
  (void)Assemble(junk);
  (void)Assemble(std::string("\0\0:\n\"\\x", 8));
  (void)Assemble(".tag \"\\");
  (void)Assemble("li r1, -");
  SUCCEED();
}

TEST(RoundTrip, EveryOpcodeThroughTextAndBinary) {
  Program p = testing::EveryOpcodeProgram();
  std::string text = Disassemble(p);
  Result<Program> q = Assemble(text, "dis.s");
  ASSERT_TRUE(q.ok()) << q.error().message << "\n" << text;
  EXPECT_EQ(*q, p) << text;
  std::vector<uint8_t> bytes = EncodeProgram(p);
  Result<Program> d = DecodeProgram(bytes);
  ASSERT_TRUE(d.ok());
  Result<Program> r = Assemble(Disassemble(*d));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(EncodeProgram(*r), bytes);
}

TEST(RoundTrip, TagTableOutOfFirstUseOrder) {
  Program p;
  p.tags = {"", "unused", "b", "a"};
  p.code = {{Opcode::kNop, {}, 3}, {Opcode::kNop, {}, 2}, {Opcode::kHalt, {}, 0}};
  std::string text = Disassemble(p);
  EXPECT_EQ(text.substr(0, text.find('\n')), ".tags \"unused\", \"b\", \"a\"");
  Result<Program> q = Assemble(text);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(*q, p);
}

TEST(RoundTrip, DisassemblyText) {
  Program p =
      Ok(".desc t rows=2 row_bytes=8\n.tag \"x\"\nl: beq r1, r2, l\n.tag \"\"\nvmovi v1, 0.1\n");
  EXPECT_EQ(Disassemble(p),
            ".desc t rows=2 row_bytes=8 src_stride=0 dst_stride=0\n"
            "L0:\n.tag \"x\"\n  beq r1, r2, L0\n.tag \"\"\n  vmovi v1, 0.1\n");
}

TEST(RoundTrip, ACollectiveStreamThroughTextAndBinary) {
  Program p =
      Ok("  xsignal f31, 1\n  halt\n.collective\nl: wait seq, f31, 1\n  xsignal f16, 1\n"
         "  halt\n");
  ASSERT_EQ(p.collective_entry, 2u);
  EXPECT_EQ(Disassemble(p),
            "  xsignal f31, 1\n  halt\n.collective\n  wait seq, f31, 1\n  xsignal f16, 1\n"
            "  halt\n");
  std::vector<uint8_t> bytes = EncodeProgram(p);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "TPUSIM02");
  Result<Program> d = DecodeProgram(bytes);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(*d, p);
  const std::vector<uint8_t> one = EncodeProgram(Ok("  halt\n"));
  EXPECT_EQ(std::string(one.begin(), one.begin() + 8), "TPUSIM01");
}

TEST(Assembler, CollectiveDirectiveErrors) {
  EXPECT_EQ(Err("  halt\n.collective\n"), "k.s:2:1: .collective is not followed by an instruction");
  EXPECT_EQ(Err(".collective\n nop\n.collective\n halt\n"),
            "k.s:3:1: a second .collective (a program has one)");
  EXPECT_EQ(Err(".collective 3\n halt\n"), "k.s:1:13: .collective takes no operands");
}

}  // namespace
}  // namespace tpusim::isa
