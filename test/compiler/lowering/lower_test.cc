// Lowering of whole modules to per-core ISA programs (compiler/lowering/driver/lower.h): kernels,
// while loops, data parallelism, collectives, and that every program assembles.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/assembly/asm_util.h"
#include "compiler/collectives/ring_allreduce.h"
#include "compiler/compile.h"
#include "compiler/hlo/parser.h"
#include "compiler/lowering/vpu/vpu_body.h"
#include "compiler/lowering/vpu/vpu_stream.h"
#include "isa/assembler.h"
#include "test/compiler/lowering/lower_test_util.h"

namespace tpusim {
namespace {

using testing::Board;
using testing::Compile;
using testing::Find;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Slurp;

TEST(AsmUtil, ScopeKernelRenamesDefinitionsAndUsesButNotDescKeysOrTags) {
  const std::string k =
      ".desc rows rows=8 row_bytes=256 src_stride=0 dst_stride=0\n.equ N 4\n.tag \"rows\"\n"
      "rows:\n    li r1, N\n    dma.hv r1, r2, rows, f0\n    blt r1, r2, rows  # rows\n    halt\n";
  EXPECT_EQ(assembly::ScopeKernel(k, "k7_"),
            ".desc k7_rows rows=8 row_bytes=256 src_stride=0 dst_stride=0\n.equ k7_N 4\n"
            ".tag \"rows\"\nk7_rows:\n    li r1, k7_N\n    dma.hv r1, r2, k7_rows, f0\n"
            "    blt r1, r2, k7_rows  # rows\n");
}

TEST(AsmUtil, LoadAddressBuildsValuesAbove2GiBFromPieces) {
  EXPECT_EQ(assembly::LoadAddress(3, 4096, 9), "    li r3, 4096\n");
  EXPECT_EQ(assembly::LoadAddress(3, (uint64_t{5} << 30) + 12, 9),
            "    li r3, 320\n    shli r3, r3, 24\n    li r9, 12\n    or r3, r3, r9\n");
}

TEST(Lower, EveryShippedModuleLowersAndEveryProgramAssembles) {
  for (const char* name : {"dot_bf16", "mlp_train_step", "conv_bn_relu", "while_loop",
                           "fusion_tiled", "allreduce_replicas", "elementwise_f32"}) {
    auto c = Compile(Slurp(std::string("examples/hlo/") + name + ".hlo"));
    ASSERT_TRUE(c) << name;
    ASSERT_EQ(c->lowered.programs.size(), 8u) << name;
    for (const std::string& p : c->lowered.programs) {
      auto program = isa::Assemble(p, name);
      ASSERT_TRUE(program.ok()) << name << ": " << program.error().message;
    }
  }
}

TEST(Lower, ResNet50TrainingStepComputesValuesInEveryKernel) {
  // Its last timing-only kernels were weight gradients: two beyond the accumulators, one
  // beyond them after its stride rewrite, and the RGB stem (3 input channels, folded; the
  // forward one space-to-depth folds into a 4x4 convolution over 12 channels).
  auto c = Compile(Slurp("examples/models/resnet50.hlo"));
  ASSERT_TRUE(c);
  std::string inexact;
  for (const lowering::LoweredOp& op : c->lowered.ops)
    if (!op.exact) inexact += " %" + op.name;
  EXPECT_EQ(inexact, "");
  EXPECT_TRUE(c->lowered.exact);
  const lowering::LoweredOp* stem = Find(c->lowered, "convolution.1222");
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->kind, lowering::KernelKind::kMxu);
}

TEST(Lower, WhileLoopRunsItsBodyTheStaticTripCountTimes) {
  auto c = Compile(Slurp("examples/hlo/while_loop.hlo"));
  ASSERT_TRUE(c);
  const lowering::LoweredOp* dot = Find(c->lowered, "y");
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(dot->executions, 10);
  EXPECT_EQ(dot->kind, lowering::KernelKind::kMxu);
  EXPECT_THAT(c->lowered.programs[0], HasSubstr("li r30, 10\n    blt r31, r30, loop0"));
}

TEST(Lower, WhileWithoutStaticTripCountIsAnErrorNamingTheOp) {
  std::string text = Slurp("examples/hlo/while_loop.hlo");
  const size_t cfg = text.find(", backend_config");
  text.erase(cfg, text.find("}}", cfg) + 2 - cfg);
  const std::string limit = "%limit = s32[] constant(10)";
  text.replace(text.find(limit), limit.size(),
               "%limit = s32[] get-tuple-element((s32[], f32[16,16]{1,0}) %state), index=0");
  auto c = CompileForBoard(text, "w.hlo", Board());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("%while (while): the trip count is not static"));
}

TEST(Lower, SingleReplicaTrainStepSplitsTheBatchAndAllReducesWeightGradients) {
  auto c = Compile(Slurp("examples/hlo/mlp_train_step.hlo"));
  ASSERT_TRUE(c);
  const lowering::LoweredModule& m = c->lowered;
  EXPECT_TRUE(m.data_parallel);
  EXPECT_EQ(m.global_batch, 32);
  EXPECT_EQ(m.batch_per_core, 4);
  EXPECT_THAT(m.batch_parameters, ::testing::ElementsAre("Arg_4.5", "Arg_5.6"));
  EXPECT_EQ(m.example_bytes, (784u + 10u) * 4u);
  int all_reduces = 0;
  for (const auto& op : m.ops) all_reduces += op.opcode == "all-reduce-start";
  // Both weight and both bias gradients and the loss, in one ring (all-reduce-combiner), on
  // the collective stream (async-collective-creator).
  EXPECT_EQ(all_reduces, 1);
  const std::string& hlo = c->report.hlo;
  int carried = 0;
  for (size_t p = hlo.find(".combined.done), index="); p != std::string::npos;
       p = hlo.find(".combined.done), index=", p + 1))
    ++carried;
  EXPECT_EQ(carried, 5);
  EXPECT_NE(m.programs[0], m.programs[1]);  // ring positions differ
}

// FSDP splits the weights along their rows over the same devices as the batch: the step
// returns its weights, so the batch is the split parameter it does not return.
TEST(Lower, FsdpWeightsSplitAlongTheirRowsAreNotTheBatch) {
  auto c = Compile(R"(HloModule fsdp, num_partitions=8
ENTRY main {
  w = f32[256,16] parameter(0), sharding={devices=[8,1]<=[8]}
  x = f32[64,256] parameter(1), sharding={devices=[8,1]<=[8]}
  h = f32[64,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  two = f32[] constant(2)
  t = f32[256,16] broadcast(two), dimensions={}
  w2 = f32[256,16] multiply(w, t)
  ROOT r = (f32[256,16], f32[64,16]) tuple(w2, h)
})");
  ASSERT_TRUE(c);
  EXPECT_THAT(c->lowered.batch_parameters, ::testing::ElementsAre("x"));
  EXPECT_EQ(c->lowered.global_batch, 64);
  EXPECT_EQ(c->lowered.batch_per_core, 8);
}

// Token ids feed an embedding one row per position: a layer's MXU rows per example are the
// sequence's length; a [batch, features] float input counts one.
TEST(Lower, TokenIdsFeedOneMxuRowPerPosition) {
  auto c = Compile(R"(HloModule lm, num_partitions=8
ENTRY main {
  e = f32[64,16] parameter(0)
  t = s32[16,32] parameter(1), sharding={devices=[8,1]<=[8]}
  one = s32[] constant(1)
  ones = s32[16,32] broadcast(one), dimensions={}
  m = s32[16,32] add(t, ones)
  ROOT r = (f32[64,16], s32[16,32]) tuple(e, m)
})");
  ASSERT_TRUE(c);
  EXPECT_THAT(c->lowered.batch_parameters, ::testing::ElementsAre("t"));
  EXPECT_EQ(c->lowered.batch_per_core, 2);
  EXPECT_EQ(c->lowered.rows_per_example, 32);
  auto mlp = Compile(Slurp("examples/hlo/mlp_train_step.hlo"));
  ASSERT_TRUE(mlp);
  EXPECT_EQ(mlp->lowered.rows_per_example, 1);
}

TEST(Lower, DotFlopsArePerCoreAndPaddingIsNoted) {
  auto c = Compile(Slurp("examples/hlo/dot_bf16.hlo"));
  ASSERT_TRUE(c);
  const lowering::LoweredOp* dot = Find(c->lowered, "dot.3");
  ASSERT_NE(dot, nullptr);
  EXPECT_DOUBLE_EQ(dot->flops, 2.0 * 128 * 1024 * 1024);
  EXPECT_TRUE(dot->exact);
  EXPECT_TRUE(dot->note.empty());
  // mlp_train_step's f32 dot of 4 rows per core runs on the packing kernel: no padding
  // reaches HBM. A bf16 dot with an odd row length stays on the padded tiled kernel.
  auto mlp = Compile(Slurp("examples/hlo/mlp_train_step.hlo"));
  const lowering::LoweredOp* d7 = Find(mlp->lowered, "dot.7");
  ASSERT_NE(d7, nullptr);
  EXPECT_TRUE(d7->exact);
  EXPECT_DOUBLE_EQ(d7->flops, 2.0 * 4 * 784 * 128);
  EXPECT_TRUE(d7->note.empty());
  auto odd = Compile(R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[32,783], w: bf16[783,128]) -> f32[32,128] {
  %x = bf16[32,783]{1,0} parameter(0)
  %w = bf16[783,128]{1,0} parameter(1)
  ROOT %d = f32[32,128]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_TRUE(odd);
  const lowering::LoweredOp* d = Find(odd->lowered, "d");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->exact);
  EXPECT_THAT(d->note, HasSubstr("padded to 32x896x256"));
}

TEST(Lower, ElementwiseFusionIsExactAndCompilationIsCached) {
  const std::string text = Slurp("examples/hlo/elementwise_f32.hlo") + "// cache test\n";
  const int before = CompilationCount();
  auto c = Compile(text);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->lowered.exact);
  auto again = Compile(text);
  EXPECT_EQ(again.get(), c.get());
  EXPECT_EQ(CompilationCount(), before + 1);
}

TEST(Lower, ReplicatedModuleLowersEachCollectiveOnTheCollectiveFlags) {
  auto c = Compile(Slurp("examples/hlo/allreduce_replicas.hlo"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->lowered.replicas, 8);
  EXPECT_FALSE(c->lowered.data_parallel);
  int collectives = 0;
  for (const auto& op : c->lowered.ops) collectives += op.kind == lowering::KernelKind::kCollective;
  EXPECT_EQ(collectives, 4);
  EXPECT_THAT(c->lowered.programs[3], HasSubstr("f16"));
  EXPECT_THAT(c->lowered.programs[3], ::testing::Not(HasSubstr("wait seq, f0,")));
}

TEST(VpuBody, FusedExpressionMapsOpByOpWithConstantsHoisted) {
  auto c = Compile(Slurp("examples/hlo/elementwise_f32.hlo") + "// body test\n");
  ASSERT_TRUE(c);
  const hlo::HloInstruction* fusion = c->optimized.entry()->root();
  ASSERT_EQ(fusion->opcode(), hlo::Opcode::kFusion);
  lowering::VpuBody b = lowering::BuildVpuBody(*fusion);
  EXPECT_TRUE(b.exact);
  EXPECT_EQ(b.inputs.size(), 2u);  // x and z; the scalar constants became registers
  EXPECT_THAT(b.prologue, ::testing::ElementsAre("vmovi v24, 1", "vmovi v25, 0"));
  EXPECT_THAT(b.body, ::testing::ElementsAre("vmul v6, v0, v1", "vadd v7, v6, v24",
                                             "vmax v8, v7, v25", "vtanh v9, v8"));
  EXPECT_EQ(b.result, 9);
}

// A bitcast-convert that changes the element width splits each 32-bit word the VPU holds:
// it moves no bits through an instruction (no cost), and its values are not computed.
TEST(VpuBody, OpsWithoutAVpuFormAreCostedButNotExact) {
  auto parsed = hlo::ParseHlo(
      "HloModule m\nENTRY %e (x: f32[8,128]) -> s16[8,128,2] {\n"
      "  %x = f32[8,128]{1,0} parameter(0)\n"
      "  ROOT %d = s16[8,128,2]{2,1,0} bitcast-convert(f32[8,128]{1,0} %x)\n}\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  lowering::VpuBody b = lowering::BuildVpuBody(*parsed->entry()->root());
  EXPECT_FALSE(b.exact);
  EXPECT_EQ(b.ops, 0);
}

// Sine and cosine of one value (about 40 ops each) fit the body's temps: a composition hands
// its intermediates back, so only results stay allocated; constants past the prologue's seven
// registers are set in the body.
TEST(VpuBody, CompositionsReuseTheirTemps) {
  auto parsed = hlo::ParseHlo(
      "HloModule m\n%f (x: f32[8,128]) -> f32[8,128] {\n"
      "  %x = f32[8,128]{1,0} parameter(0)\n"
      "  %s = f32[8,128]{1,0} sine(f32[8,128]{1,0} %x)\n"
      "  %c = f32[8,128]{1,0} cosine(f32[8,128]{1,0} %x)\n"
      "  ROOT %a = f32[8,128]{1,0} add(f32[8,128]{1,0} %s, f32[8,128]{1,0} %c)\n}\n"
      "ENTRY %e (x: f32[8,128]) -> f32[8,128] {\n"
      "  %x = f32[8,128]{1,0} parameter(0)\n"
      "  ROOT %r = f32[8,128]{1,0} fusion(f32[8,128]{1,0} %x), kind=kLoop, calls=%f\n}\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  lowering::VpuBody b = lowering::BuildVpuBody(*parsed->entry()->root());
  EXPECT_TRUE(b.exact);
  EXPECT_GT(b.ops, 70);
  EXPECT_EQ(b.prologue.size(), 7u);
  int highest = 0, body_constants = 0;
  for (const std::string& line : b.body) {
    body_constants += line.starts_with("vmovi");
    const std::string dst = line.substr(line.find(" v") + 2);
    if (line.find(" v") != std::string::npos && !line.starts_with("vmovi") && std::stoi(dst) < 24)
      highest = std::max(highest, std::stoi(dst));
  }
  EXPECT_GT(body_constants, 0);
  EXPECT_LE(highest, 16);  // of v6..v23
}

TEST(VpuStream, ChunksAreDoubleBufferedAndTheTailGetsItsOwnPass) {
  lowering::VpuStream st;
  st.inputs = {{0, 4, 4104 * 4096}};
  st.output = {1u << 25, 4, 4104 * 4096};
  st.vregs = 4104;  // one input and the output share a slot: 8 chunks of 512, a tail of 8
  st.body = {"vadd v6, v0, v0"};
  st.result = 6;
  st.tag = "t";
  const std::string k = lowering::VpuStreamKernel(st);
  EXPECT_THAT(k, HasSubstr(".desc a_in0 rows=1 row_bytes=2097152"));
  EXPECT_THAT(k, HasSubstr(".desc b_in0 rows=1 row_bytes=32768"));
  EXPECT_THAT(k, HasSubstr("wait vpu, f1, 1"));  // the second slot
  // Each chunk is one hardware loop: load, add and store one vreg per trip.
  EXPECT_THAT(k, HasSubstr("li r14, 512\n    vloop r14, 3\n    vlds v0, r7, 4096\n"
                           "    vadd v6, v0, v0\n    vsts v6, r13, 4096\n"));
  EXPECT_THAT(k, HasSubstr("li r14, 8\n    vloop r14, 3\n"));
  auto program = isa::Assemble(k + "    halt\n", "stream");
  EXPECT_TRUE(program.ok()) << program.error().message;
}

TEST(VpuStream, SmallStreamsKeepEightChunksToOverlap) {
  lowering::VpuStream st;
  st.inputs = {{0, 4, 1024 * 4096}};
  st.output = {1u << 25, 4, 1024 * 4096};
  st.vregs = 1024;  // chunks of 512 would leave two: 8 chunks of 128
  st.body = {"vadd v6, v0, v0"};
  st.result = 6;
  st.tag = "t";
  const std::string k = lowering::VpuStreamKernel(st);
  EXPECT_THAT(k, HasSubstr(".desc a_in0 rows=1 row_bytes=524288"));
  EXPECT_THAT(k, HasSubstr("li r2, 8\n"));  // chunks
  EXPECT_THAT(k, Not(HasSubstr("b_in0")));
}

// A stream shorter than one chunk takes areas of its own length: 2 slots x (input + output)
// x 10 vregs, then the splat area, so it fits beside another kernel (kernel windows).
TEST(VpuStream, AShortStreamReportsOnlyTheVmemItsAreasTake) {
  lowering::VpuStream st;
  st.inputs = {{0, 4, 10 * 4096}};
  st.output = {1u << 25, 4, 10 * 4096};
  st.vregs = 10;
  st.body = {"vadd v6, v0, v0"};
  st.result = 6;
  st.tag = "t";
  EXPECT_EQ(lowering::VpuStreamVmemBytes(st), 2 * 2 * 10 * 4096 + 6 * 4096);
  const std::string k = lowering::VpuStreamKernel(st);
  EXPECT_THAT(k, HasSubstr("li r13, 40960\n"));  // slot 0: the output's area after the input's
}

TEST(VpuStream, MoreOperandsShareTheSlotInShorterChunks) {
  lowering::VpuStream st;
  for (uint64_t i = 0; i < 3; ++i) st.inputs.push_back({i << 24, 4, 2048 * 4096});
  st.output = {3u << 24, 4, 2048 * 4096};
  st.vregs = 2048;  // three inputs and the output: 8 chunks of 256 in areas of 1 MiB
  st.body = {"vadd v6, v0, v1", "vadd v7, v6, v2"};
  st.result = 7;
  st.tag = "t";
  const std::string k = lowering::VpuStreamKernel(st);
  EXPECT_THAT(k, HasSubstr(".desc a_in2 rows=1 row_bytes=1048576"));
  EXPECT_THAT(k, HasSubstr("li r9, 2097152\n"));   // slot 0: input 2's area
  EXPECT_THAT(k, HasSubstr("li r13, 3145728\n"));  // slot 0: the output's
  EXPECT_THAT(k, HasSubstr("li r13, 7340032\n"));  // slot 1 (4 MiB on): the output's
  EXPECT_THAT(k, HasSubstr("li r14, 256\n    vloop r14, 6\n"));
  EXPECT_THAT(k, Not(HasSubstr("b_in0")));  // no tail
  auto program = isa::Assemble(k + "    halt\n", "stream");
  EXPECT_TRUE(program.ok()) << program.error().message;
}

}  // namespace
}  // namespace tpusim

namespace tpusim::testing {
namespace {

// A chain of 200,000 elementwise ops, one loop fusion, compiled on the test's own 8 MiB
// stack: no walk over the instruction graph nests a frame per op (the VPU body builder and
// the fused layout propagation recursed once per op and died with SIGSEGV at this depth).
TEST(Lowering, ADeepChainCompilesOnTheCallersStack) {
  std::ostringstream text;
  text << "HloModule deep\nENTRY main {\n  a0 = f32[128] parameter(0)\n";
  for (int i = 1; i <= 200000; ++i) text << "  a" << i << " = f32[128] negate(a" << i - 1 << ")\n";
  text << "}\n";
  const auto compiled = Compile(text.str());
  ASSERT_NE(compiled, nullptr);
  int fusions = 0;
  for (const lowering::LoweredOp& op : compiled->lowered.ops) fusions += op.opcode == "fusion";
  EXPECT_EQ(fusions, 1);  // the whole chain in one VPU stream
}

// replica_groups that leave a core out (an all-to-all over mesh['x'=4] on 8 cores, found by
// pipeline_fuzz: the lowering divided by the empty group's size) stop with one line.
TEST(Lowering, ACollectiveThatLeavesACoreOutIsRefused) {
  auto c = CompileForBoard(R"(HloModule m, num_partitions=8
ENTRY main {
  p = f32[64,128] parameter(0)
  ROOT a = f32[64,128] all-to-all(p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={1}
})",
                           "test.hlo", Board());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "%a (all-to-all): replica_groups put core 4 in 0 groups; each core belongs to "
                "exactly one"),
            std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace tpusim::testing
