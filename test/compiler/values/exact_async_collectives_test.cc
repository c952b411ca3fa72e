// Asynchronous all-reduces and all-gathers on the collective stream: the kernels scheduled
// between a start and its done run beside the ring (planned below its VMEM), and every value
// stays exact.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

// An 8-replica module with the %add reducer its all-reduces and reduce-scatters apply,
// then `rest` (the entry, and any other computation).
std::string WithAdd(const char* rest) {
  return std::string(R"(HloModule m, replica_count=8
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
)") + rest;
}

// `hlo` compiled for a v3-8 as the value runs compile it.
std::shared_ptr<const CompiledModule> Compile(const std::string& hlo) {
  bool exact = false;
  std::string inexact;
  return testing::CompileForValues(hlo, sim::LoadConfig("v3-8"), exact, inexact);
}

// An 8 MiB gradient (2 MiB ring segments in pairs) all-reduced while a dot and a VPU stream
// that do not need it run; the weight update waits for it.
const std::string kGradientBesideWork = WithAdd(
    R"(ENTRY %main (g: f32[2048,1024], a: f32[256,512], b: f32[512,384], w: f32[2048,1024]) -> (f32[2048,1024], f32[256,384]) {
  %g = f32[2048,1024]{1,0} parameter(0)
  %a = f32[256,512]{1,0} parameter(1)
  %b = f32[512,384]{1,0} parameter(2)
  %w = f32[2048,1024]{1,0} parameter(3)
  %ar = f32[2048,1024]{1,0} all-reduce(%g), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  %d = f32[256,384]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %e = f32[256,384]{1,0} tanh(%d)
  %u = f32[2048,1024]{1,0} subtract(%w, %ar)
  ROOT %t = (f32[2048,1024]{1,0}, f32[256,384]{1,0}) tuple(%u, %e)
})");

TEST(ExactAsyncCollectives, AGradientAllReducedBesideADotAndAStreamIsExact) {
  testing::ExpectMatch(kGradientBesideWork, 1e-5);
}

// The main stream starts the all-reduce, runs the dot and the stream, then waits for it; the
// collective stream's ring keeps its buffers above the 4 MiB the kernels beside it plan for.
TEST(ExactAsyncCollectives, TheKernelsBetweenStartAndDoneRunBesideTheRing) {
  auto c = Compile(kGradientBesideWork);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->lowered.collective_stream);
  const std::string& p = c->lowered.programs.at(0);
  const size_t start = p.find("xsignal f31, 1   # start ar"), dot = p.find(".tag \"d\""),
               stream = p.find(".tag \"e\""), done = p.find("wait seq, f16, 1"),
               update = p.find(".tag \"u\""), collective = p.find(".collective\n");
  ASSERT_NE(start, std::string::npos) << p;
  EXPECT_LT(start, dot);
  EXPECT_LT(dot, stream);
  EXPECT_LT(stream, done);
  EXPECT_LT(done, update);
  EXPECT_LT(update, collective);
  EXPECT_NE(p.find("li r29, 4194304", collective), std::string::npos);  // the ring's region
  for (const lowering::LoweredOp& op : c->lowered.ops)
    if (op.name == "d" || op.name == "e") {
      EXPECT_GE(op.vmem_bytes, 0) << op.name;
      EXPECT_LE(op.vmem_bytes, int64_t{4} << 20) << op.name;
    }
}

// A small all-reduce (a batch norm's sums) goes by the butterfly, whose buffers take only the
// top 28 KiB of VMEM: a dot beside it plans for the rest.
TEST(ExactAsyncCollectives, AButterflyBesideADotTakesOnlyTheTopOfVmem) {
  const std::string kHlo = WithAdd(
      R"(ENTRY %main (g: f32[1024], a: f32[256,512], b: f32[512,384]) -> (f32[1024], f32[256,384]) {
  %g = f32[1024]{0} parameter(0)
  %a = f32[256,512]{1,0} parameter(1)
  %b = f32[512,384]{1,0} parameter(2)
  %ar = f32[1024]{0} all-reduce(%g), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  %d = f32[256,384]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[1024]{0}, f32[256,384]{1,0}) tuple(%ar, %d)
})");
  testing::ExpectMatch(kHlo, 1e-5);
  auto c = Compile(kHlo);
  ASSERT_TRUE(c);
  const int64_t base = (int64_t{16} << 20) - 7 * 4096;  // partials 0..3 and 3 slots of 4 KiB
  for (const lowering::LoweredOp& op : c->lowered.ops) {
    if (op.name == "ar") {
      EXPECT_EQ(op.collective_vmem_base, base);
    }
    if (op.name == "d") {
      EXPECT_GT(op.vmem_bytes, int64_t{4} << 20);
    }
  }
  const std::string& p = c->lowered.programs.at(0);
  EXPECT_LT(p.find("xsignal f31, 1   # start ar"), p.find(".tag \"d\""));
  EXPECT_NE(p.find("li r1, " + std::to_string(base), p.find(".collective\n")), std::string::npos);
}

// The tiled VPU kernel (a broadcast operand) keeps below its index table at 10 MiB: it runs
// beside a butterfly, not beside a ring.
TEST(ExactAsyncCollectives, TheTiledKernelRunsBesideAButterfly) {
  const std::string kHlo =
      WithAdd(R"(ENTRY %main (g: f32[256], x: f32[64,300], v: f32[300]) -> (f32[256], f32[64,300]) {
  %g = f32[256]{0} parameter(0)
  %x = f32[64,300]{1,0} parameter(1)
  %v = f32[300]{0} parameter(2)
  %ar = f32[256]{0} all-reduce(%g), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  %vb = f32[64,300]{1,0} broadcast(%v), dimensions={1}
  %y = f32[64,300]{1,0} add(%x, %vb)
  ROOT %t = (f32[256]{0}, f32[64,300]{1,0}) tuple(%ar, %y)
})");
  testing::ExpectMatch(kHlo, 1e-5);
  auto c = Compile(kHlo);
  ASSERT_TRUE(c);
  bool tiled = false;
  for (const lowering::LoweredOp& op : c->lowered.ops) {
    if (op.name != "y" && op.name.rfind("fusion", 0) != 0) continue;
    tiled = true;
    EXPECT_EQ(op.vmem_bytes, (int64_t{10} << 20) + 4096) << op.name;
  }
  EXPECT_TRUE(tiled);
  const std::string& p = c->lowered.programs.at(0);
  EXPECT_NE(p.find("# tiled VPU kernel"), std::string::npos);
  EXPECT_LT(p.find("xsignal f31, 1   # start ar"), p.find("# tiled VPU kernel"));
  EXPECT_LT(p.find("# tiled VPU kernel"), p.find("wait seq, f16"));
}

// The feature stream (per-feature sums, batch norm's passes) keeps below 11.5 MiB of VMEM
// (FlatBatchNorm::VmemBytes): it runs beside a butterfly, whose buffers take the top 28 KiB.
TEST(ExactAsyncCollectives, TheFeatureStreamRunsBesideAButterfly) {
  const std::string kHlo =
      WithAdd(R"(ENTRY %main (g: f32[1024], x: f32[2048,256]) -> (f32[1024], f32[256]) {
  %g = f32[1024]{0} parameter(0)
  %x = f32[2048,256]{1,0} parameter(1)
  %ar = f32[1024]{0} all-reduce(%g), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  %sq = f32[2048,256]{1,0} multiply(%x, %x)
  %z = f32[] constant(0)
  %r = f32[256]{0} reduce(%sq, %z), dimensions={0}, to_apply=%add
  ROOT %t = (f32[1024]{0}, f32[256]{0}) tuple(%ar, %r)
})");
  testing::ExpectMatch(kHlo, 1e-5);
  auto c = Compile(kHlo);
  ASSERT_TRUE(c);
  const std::string& p = c->lowered.programs.at(0);
  const size_t stream = p.find("# feature stream");
  ASSERT_NE(stream, std::string::npos) << p;
  EXPECT_LT(p.find("xsignal f31, 1   # start ar"), stream);
  EXPECT_LT(stream, p.find("wait seq, f16"));
}

// FSDP's weight gathers: each all-gather is started as soon as the one before is done and runs
// beside the dot that does not need it; one gathers 8 MiB in two rounds, one along a minor
// dimension (rows of every member interleaved), and the values stay exact.
constexpr const char* kWeightGathers = R"(HloModule m, replica_count=8
ENTRY %main (w1: f32[64,256], w2: f32[256,1024], w3: f32[128,32], x: f32[128,512]) -> (f32[128,256], f32[2048,1024], f32[128,256]) {
  %w1 = f32[64,256]{1,0} parameter(0)
  %w2 = f32[256,1024]{1,0} parameter(1)
  %w3 = f32[128,32]{1,0} parameter(2)
  %x = f32[128,512]{1,0} parameter(3)
  %g1 = f32[512,256]{1,0} all-gather(%w1), dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}
  %d1 = f32[128,256]{1,0} dot(%x, %g1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %g2 = f32[2048,1024]{1,0} all-gather(%w2), dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}
  %g3 = f32[128,256]{1,0} all-gather(%w3), dimensions={1}, replica_groups={{0,1,2,3,4,5,6,7}}
  ROOT %t = (f32[128,256]{1,0}, f32[2048,1024]{1,0}, f32[128,256]{1,0}) tuple(%d1, %g2, %g3)
})";

TEST(ExactAsyncCollectives, WeightGathersBesideADotAreExact) {
  testing::ExpectMatch(kWeightGathers, 1e-5);
}

TEST(ExactAsyncCollectives, AnAllGatherRunsBesideTheDotThatDoesNotNeedIt) {
  auto c = Compile(kWeightGathers);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->lowered.collective_stream);
  const std::string& p = c->lowered.programs.at(0);
  const size_t g1 = p.find("# start g1"), g2 = p.find("# start g2"), dot = p.find(".tag \"d1\""),
               collective = p.find(".collective\n");
  ASSERT_NE(g1, std::string::npos) << p;
  ASSERT_NE(g2, std::string::npos) << p;
  EXPECT_LT(g1, g2);
  EXPECT_LT(g2, dot);  // g1 is done before the dot, which runs beside g2
  EXPECT_LT(dot, p.find("wait seq, f16", g2));
  EXPECT_LT(dot, collective);
  for (const lowering::LoweredOp& op : c->lowered.ops) {
    // The gathered round and its staged parts at the top of VMEM: 4 MiB rounds of g2 take 8.
    if (op.name == "g2") {
      EXPECT_EQ(op.collective_vmem_base, int64_t{8} << 20);
    }
    if (op.name == "g1") {
      EXPECT_EQ(op.collective_vmem_base, (int64_t{16} << 20) - 2 * (512 << 10));
    }
    if (op.name == "d1") {
      EXPECT_GE(op.vmem_bytes, 0);
      EXPECT_LE(op.vmem_bytes, int64_t{8} << 20);
    }
  }
  EXPECT_NE(p.find("li r29, 8388608", collective), std::string::npos);
}

// FSDP's gradient reduce-scatters: XLA's reduce-scatter-start ((operand), result) runs beside
// the dot that does not need it, one of 8 MiB in two rounds; the values stay exact.
TEST(ExactAsyncCollectives, GradientReduceScattersBesideADotAreExact) {
  const std::string kHlo = WithAdd(
      R"(ENTRY %main (g1: f32[512,256], g2: f32[2048,1024], x: f32[128,512], w: f32[512,256]) -> (f32[64,256], f32[256,1024], f32[128,256]) {
  %g1 = f32[512,256]{1,0} parameter(0)
  %g2 = f32[2048,1024]{1,0} parameter(1)
  %x = f32[128,512]{1,0} parameter(2)
  %w = f32[512,256]{1,0} parameter(3)
  %r1 = f32[64,256]{1,0} reduce-scatter(%g1), dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  %r2 = f32[256,1024]{1,0} reduce-scatter(%g2), dimensions={0}, replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  %d = f32[128,256]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (f32[64,256]{1,0}, f32[256,1024]{1,0}, f32[128,256]{1,0}) tuple(%r1, %r2, %d)
})");
  testing::ExpectMatch(kHlo, 1e-5);
  auto c = Compile(kHlo);
  ASSERT_TRUE(c);
  const std::string& p = c->lowered.programs.at(0);
  EXPECT_NE(p.find("# start r1"), std::string::npos) << p;
  EXPECT_LT(p.find("# start r1"), p.find(".tag \"d\""));
  for (const lowering::LoweredOp& op : c->lowered.ops)
    if (op.name == "r2") {
      EXPECT_EQ(op.collective_vmem_base, int64_t{8} << 20);  // 4 MiB rounds and their slots
    }
}

// difftest seeds 341013 and 341146: a tiled VPU kernel with an index table beside an
// asynchronous all-gather deadlocked. The table's copy completed on f8, which the sequencer's
// final wait (for the VPU's last hand-over, also on f8) took first once the collective
// stream's copies had delayed the VPU; the copy now completes on f9 (tile_code.cc). Seed
// 341146's module, the same race, is left out; FlagHandshake scans every shipped module.
TEST(ExactAsyncCollectives, TiledKernelWithAnIndexTableBesideAGatherSeed341013) {
  testing::ExpectMatch(R"(HloModule difftest_341013, num_partitions=8

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}

cond {
  s = (s32[], f32[8,16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[8,16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8,16] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[8,16] tanh(x)
  ROOT out = (s32[], f32[8,16]) tuple(j, y)
}

ENTRY main {
  v0 = f32[24] parameter(0), sharding={replicated}
  v8 = f32[8,16] parameter(1), sharding={devices=[2,4]<=[2,4]T(1,0)}
  v9 = s32[] constant(0)
  v10 = (s32[], f32[8,16]) tuple(v9, v8)
  v11 = (s32[], f32[8,16]) while(v10), condition=cond, body=body
  v12 = f32[8,16] get-tuple-element(v11), index=1
  v13 = s32[8,16] iota(), iota_dimension=0
  v14 = f32[8,16] convert(v13)
  v15 = f32[8,16] multiply(v12, v14)
  v16 = s32[8,16] parameter(2), sharding={devices=[1,8]<=[8]}
  v17 = s32[8,16] parameter(3), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  v25 = s32[24] parameter(4), sharding={devices=[2,4]<=[8] last_tile_dim_replicate}
  v26 = s32[24] negate(v25)
  v27 = f32[24] convert(v26)
  v29 = f32[8,16] copy(v12), sharding={devices=[1,2,4]<=[8] last_tile_dim_replicate}
  ROOT out = (f32[8,16], f32[24], f32[8,16]) tuple(v15, v27, v29)
})",
                       1e-5);
}

// difftest seed 330265: an all-reduce started before a loop and done after it. The loop body's
// kernels cannot run beside it (a wait in the body would run once per trip): it is awaited
// before the loop.
TEST(ExactAsyncCollectives, AnAllReduceInFlightIsAwaitedBeforeALoop) {
  testing::ExpectMatch(WithAdd(R"(%cond (s: (s32[], f32[8,16])) -> pred[] {
  %s = (s32[], f32[8,16]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %c = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[8,16])) -> (s32[], f32[8,16]) {
  %s = (s32[], f32[8,16]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[8,16] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %y = f32[8,16] tanh(%x)
  ROOT %out = (s32[], f32[8,16]) tuple(%j, %y)
}
ENTRY %main (v2: f32[256,128], v3: f32[8,16]) -> (f32[8,16], f32[256,128]) {
  %v2 = f32[256,128] parameter(0)
  %v3 = f32[8,16] parameter(1)
  %v4 = s32[] constant(0)
  %v5 = (s32[], f32[8,16]) tuple(%v4, %v3)
  %v6 = (s32[], f32[8,16]) while(%v5), condition=%cond, body=%body
  %v7 = f32[8,16] get-tuple-element(%v6), index=1
  %v16 = f32[256,128] all-reduce(%v2), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  ROOT %out = (f32[8,16], f32[256,128]) tuple(%v7, %v16)
})"),
                       1e-5);
}

}  // namespace
}  // namespace tpusim
