// Parse-print round trips of the example modules in examples/hlo/.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"

namespace tpusim::hlo {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ExampleRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(ExampleRoundTrip, PrintParsePrintIsStable) {
  std::string path = std::string("examples/hlo/") + GetParam();
  std::string text = ReadFile(path);
  ASSERT_FALSE(text.empty()) << path;
  Result<HloModule> m = ParseHlo(text, path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Status verified = VerifyModule(*m);
  EXPECT_TRUE(verified.ok()) << verified.message();
  std::string printed = PrintModule(*m);
  Result<HloModule> again = ParseHlo(printed, "printed");
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << printed;
  EXPECT_EQ(PrintModule(*again), printed);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleRoundTrip,
                         ::testing::Values("mlp_train_step.hlo", "conv_bn_relu.hlo",
                                           "allreduce_replicas.hlo", "while_loop.hlo",
                                           "fusion_tiled.hlo"));

TEST(RoundTrip, KeepsVerbatimAttributes) {
  std::string text = ReadFile("examples/hlo/fusion_tiled.hlo");
  Result<HloModule> m = ParseHlo(text, "fusion_tiled.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::string printed = PrintModule(*m);
  for (const char* piece :
       {"frontend_attributes={_xla_buffer_placement=\"arg\"}", "sharding={devices=[2,1]0,1}",
        "control-predecessors={%dynamic-slice.7}", "{1,0:T(8,128)(2,1)S(1)}",
        "backend_config=\"{\\\"flag_configs\\\":[],\\\"scoped_memory_configs\\\":[]}\"",
        "input_output_alias={ {2}: (0, {}, may-alias) }", "alias_passthrough_params=true",
        "constant({1, -2.5, inf, nan})", "slice={[0:128:2], [0:1024]}", "padding=0_64x0_0",
        "kind=kLoop, calls=%fused_computation"}) {
    EXPECT_NE(printed.find(piece), std::string::npos) << piece << "\n" << printed;
  }
}

// Found by the parser fuzzer (stop 20): an empty window printed as "{size=}", which did not
// parse back.
TEST(RoundTrip, EmptyWindow) {
  const std::string text =
      "HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n  k = f32[3,4] parameter(1)\n"
      "  ROOT c = f32[2,4] convolution(x, k), window={}, dim_labels=bf_io->bf\n}\n";
  Result<HloModule> m = ParseHlo(text, "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string printed = PrintModule(*m);
  EXPECT_NE(printed.find("window={}"), std::string::npos) << printed;
  Result<HloModule> again = ParseHlo(printed, "printed");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(PrintModule(*again), printed);
}

// Found by the parser fuzzer (stop 20): a nested operand took the name of the instruction
// it is an operand of, and the printed module held that name twice. Whatever id the nested
// constant gets, the names stay distinct.
TEST(RoundTrip, NestedOperandNamesAvoidTheirUser) {
  for (int k = 0; k < 6; ++k) {
    const std::string text = "HloModule m\nENTRY e {\n  ROOT %constant." + std::to_string(k) +
                             " = f32[] convert(f32[] constant(0))\n}\n";
    Result<HloModule> m = ParseHlo(text, "m.hlo");
    ASSERT_TRUE(m.ok()) << m.status().message();
    const std::string printed = PrintModule(*m);
    Result<HloModule> again = ParseHlo(printed, "printed");
    ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << printed;
    EXPECT_EQ(PrintModule(*again), printed);
  }
}

TEST(RoundTrip, ShortFormBareNamesAndNestedOperands) {
  const char* text = R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  p = f32[4] parameter(0)
  ROOT r = f32[] reduce(p, f32[] constant(0)), dimensions={0}, to_apply=add
})";
  Result<HloModule> m = ParseHlo(text, "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->computations().size(), 2u);
  const HloInstruction* r = m->entry()->root();
  ASSERT_EQ(r->operand_count(), 2u);
  EXPECT_EQ(r->operand(1)->opcode(), Opcode::kConstant);
  EXPECT_EQ(r->to_apply(), m->Find("add"));
  std::string printed = PrintModule(*m);
  Result<HloModule> again = ParseHlo(printed, "printed");
  ASSERT_TRUE(again.ok()) << again.status().message() << printed;
  EXPECT_EQ(PrintModule(*again), printed);
}

}  // namespace
}  // namespace tpusim::hlo
