// SPMD partitioner rules for what a data-parallel step holds beyond dots: batch norm
// (expanded, its sums all-reduced), pooling windows and their gradients, slices, pads,
// concatenates, sorts and dynamic slices along other dimensions, reshapes merging the batch,
// fusions and while loops partitioned inside; and the batch-sharding pass that writes the
// inferred batch split of an unannotated module as shardings. IR in, IR out; values against
// the evaluator on the global module (spmd_test_util.h).
#include <gtest/gtest.h>

#include "compiler/spmd/batch_sharding.h"
#include "test/compiler/spmd/spmd_test_util.h"

namespace tpusim::spmd {
namespace {

constexpr char kMax[] =
    "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT m = f32[] maximum(a, b)\n}\n";
constexpr char kGe[] =
    "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT c = pred[] compare(a, b), direction=GE\n}\n";

const std::string kBatchNorm = std::string("HloModule bn\n") + R"(
ENTRY main {
  x = f32[16,4,4,32] parameter(0), sharding={devices=[8,1,1,1]<=[8]}
  g = f32[32] parameter(1)
  b = f32[32] parameter(2)
  dy = f32[16,4,4,32] parameter(3), sharding={devices=[8,1,1,1]<=[8]}
  bn = (f32[16,4,4,32], f32[32], f32[32]) batch-norm-training(x, g, b), epsilon=0.001, feature_index=3
  y = f32[16,4,4,32] get-tuple-element(bn), index=0
  mean = f32[32] get-tuple-element(bn), index=1
  var = f32[32] get-tuple-element(bn), index=2
  grad = (f32[16,4,4,32], f32[32], f32[32]) batch-norm-grad(x, g, mean, var, dy), epsilon=0.001, feature_index=3
  dx = f32[16,4,4,32] get-tuple-element(grad), index=0
  dg = f32[32] get-tuple-element(grad), index=1
  db = f32[32] get-tuple-element(grad), index=2
  inf = f32[16,4,4,32] batch-norm-inference(x, g, b, mean, var), epsilon=0.001, feature_index=3
  ROOT r = (f32[16,4,4,32], f32[32], f32[32], f32[16,4,4,32], f32[32], f32[32], f32[16,4,4,32]) tuple(y, mean, var, dx, dg, db, inf)
}
)";

TEST(SpmdRules, BatchNormExpandsWithTheWholeBatchsStatistics) {
  const std::string ir = Partition(kBatchNorm);
  EXPECT_FALSE(Has(ir, "batch-norm-training("));
  EXPECT_FALSE(Has(ir, "batch-norm-grad("));
  EXPECT_TRUE(Has(ir, "%inf = f32[2,4,4,32] batch-norm-inference("));
  EXPECT_EQ(Count(ir, " all-reduce("), 4);  // sums and squares; dbeta and dscale's sums
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_LT(PartitionError(kBatchNorm), 1e-4);
}

// bf16 x with f32 statistics (bf16-conversion-folding's form; difftest found the expansion
// multiplying f32 by bf16, which the verifier refused): the arithmetic runs in f32 on the
// widened x and dy, and y and dx are narrowed back.
const std::string kBf16BatchNorm = std::string("HloModule bn\n") + R"(
ENTRY main {
  x = bf16[16,4,4,32] parameter(0), sharding={devices=[8,1,1,1]<=[8]}
  g = f32[32] parameter(1)
  b = f32[32] parameter(2)
  dy = bf16[16,4,4,32] parameter(3), sharding={devices=[8,1,1,1]<=[8]}
  bn = (bf16[16,4,4,32], f32[32], f32[32]) batch-norm-training(x, g, b), epsilon=0.001, feature_index=3
  y = bf16[16,4,4,32] get-tuple-element(bn), index=0
  mean = f32[32] get-tuple-element(bn), index=1
  var = f32[32] get-tuple-element(bn), index=2
  grad = (bf16[16,4,4,32], f32[32], f32[32]) batch-norm-grad(x, g, mean, var, dy), epsilon=0.001, feature_index=3
  dx = bf16[16,4,4,32] get-tuple-element(grad), index=0
  dg = f32[32] get-tuple-element(grad), index=1
  ROOT r = (bf16[16,4,4,32], f32[32], f32[32], bf16[16,4,4,32], f32[32]) tuple(y, mean, var, dx, dg)
}
)";

TEST(SpmdRules, Bf16BatchNormWithF32StatisticsExpandsInF32) {
  const std::string& bf16 = kBf16BatchNorm;
  const std::string ir = Partition(bf16);
  EXPECT_FALSE(Has(ir, "batch-norm-training(")) << ir;
  EXPECT_TRUE(Has(ir, "%bn.convert = f32[2,4,4,32] convert(bf16[2,4,4,32]")) << ir;
  EXPECT_TRUE(Has(ir, "%bn.convert.1 = bf16[2,4,4,32] convert(f32[2,4,4,32]")) << ir;
  EXPECT_TRUE(Has(ir, "%grad.convert.2 = bf16[2,4,4,32] convert(f32[2,4,4,32]")) << ir;
  EXPECT_EQ(Count(ir, " all-reduce("), 4);
  EXPECT_LT(PartitionError(bf16), 1e-2);
}

const std::string kPooling = std::string("HloModule pool\n") + kMax + kAdd + kGe + R"(
ENTRY main {
  x = f32[16,8,8,4] parameter(0), sharding={devices=[8,1,1,1]<=[8]}
  dy = f32[16,4,4,4] parameter(1), sharding={devices=[8,1,1,1]<=[8]}
  lowest = f32[] constant(-inf)
  zero = f32[] constant(0)
  p = f32[16,4,4,4] reduce-window(x, lowest), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
  dx = f32[16,8,8,4] select-and-scatter(x, dy, zero), window={size=1x2x2x1 stride=1x2x2x1}, select=ge, scatter=add
  ROOT r = (f32[16,4,4,4], f32[16,8,8,4]) tuple(p, dx)
}
)";

TEST(SpmdRules, PoolingWindowsRunOnEachDevicesExamples) {
  const std::string ir = Partition(kPooling);
  EXPECT_TRUE(Has(ir, "%p = f32[2,4,4,4] reduce-window("));
  EXPECT_TRUE(Has(ir, "%dx = f32[2,8,8,4] select-and-scatter("));
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_EQ(PartitionError(kPooling), 0);
}

const std::string kLayout = std::string("HloModule layout\n") + kGe + R"(
ENTRY main {
  x = f32[16,12] parameter(0), sharding={devices=[8,1]<=[8]}
  i = s32[] parameter(1)
  s = f32[16,6] slice(x), slice={[0:16], [2:8]}
  zero = f32[] constant(0)
  p = f32[16,15] pad(x, zero), padding=0_0x1_2
  c = f32[16,18] concatenate(x, s), dimensions={1}
  v = f32[16,12] reverse(x), dimensions={1}
  o = f32[16,12] sort(x), dimensions={1}, to_apply=ge
  ds = f32[16,5] dynamic-slice(x, i, i), dynamic_slice_sizes={16,5}
  u = f32[16,12] dynamic-update-slice(x, s, i, i)
  ROOT r = (f32[16,6], f32[16,15], f32[16,18], f32[16,12], f32[16,12], f32[16,5], f32[16,12]) tuple(s, p, c, v, o, ds, u)
}
)";

TEST(SpmdRules, DataMovementAlongOtherDimensionsStaysOnEachDevice) {
  const std::string ir = Partition(kLayout);
  EXPECT_TRUE(Has(ir, "%s = f32[2,6] slice("));
  EXPECT_TRUE(Has(ir, "slice={[0:2], [2:8]}"));
  EXPECT_TRUE(Has(ir, "%ds = f32[2,5] dynamic-slice("));
  EXPECT_TRUE(Has(ir, "dynamic_slice_sizes={2,5}"));
  EXPECT_TRUE(Has(ir, "%u = f32[2,12] dynamic-update-slice("));
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_EQ(PartitionError(kLayout), 0);
}

// A slice of the batch itself takes rows of other devices: gathered first.
TEST(SpmdRules, ASliceOfTheBatchIsGathered) {
  const std::string text = R"(HloModule m
ENTRY main {
  x = f32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}
  ROOT s = f32[5,4] slice(x), slice={[3:8], [0:4]}
}
)";
  const std::string ir = Partition(text);
  EXPECT_EQ(Count(ir, " all-gather("), 1);
  EXPECT_EQ(PartitionError(text), 0);
}

const std::string kReshape = std::string("HloModule rs\n") + R"(
ENTRY main {
  x = f32[16,6,4] parameter(0), sharding={devices=[8,1,1]<=[8]}
  merged = f32[96,4] reshape(x)
  t = f32[96,4] tanh(merged)
  split = f32[16,24] reshape(t)
  major = f32[8,2,24] reshape(split)
  ROOT r = (f32[96,4], f32[8,2,24]) tuple(t, major)
}
)";

TEST(SpmdRules, ReshapesKeepTheBatchsTilesContiguous) {
  const std::string ir = Partition(kReshape);
  EXPECT_TRUE(Has(ir, "%merged = f32[12,4] reshape("));
  EXPECT_TRUE(Has(ir, "%split = f32[2,24] reshape("));
  EXPECT_TRUE(Has(ir, "%major = f32[1,2,24] reshape("));
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_EQ(PartitionError(kReshape), 0);
}

const std::string kFusions = std::string("HloModule f\n") + kAdd + R"(
scaled {
  p0 = f32[16,8] parameter(0)
  p1 = f32[] parameter(1)
  b = f32[16,8] broadcast(p1), dimensions={}
  ROOT m = f32[16,8] multiply(p0, b)
}
summed {
  q0 = f32[16,8] parameter(0)
  e = f32[16,8] exponential(q0)
  z = f32[] constant(0)
  ROOT s = f32[8] reduce(e, z), dimensions={0}, to_apply=add
}
shifted {
  r0 = f32[16,8] parameter(0)
  ROOT sl = f32[4,8] slice(r0), slice={[6:10], [0:8]}
}
ENTRY main {
  x = f32[16,8] parameter(0), sharding={devices=[8,1]<=[8]}
  k = f32[] parameter(1)
  a = f32[16,8] fusion(x, k), kind=kLoop, calls=scaled
  s = f32[8] fusion(a), kind=kInput, calls=summed
  w = f32[4,8] fusion(a), kind=kLoop, calls=shifted
  ROOT r = (f32[16,8], f32[8], f32[4,8]) tuple(a, s, w)
}
)";

TEST(SpmdRules, FusionBodiesArePartitionedWhenTheyNeedNoCollective) {
  const std::string ir = Partition(kFusions);
  EXPECT_TRUE(Has(ir, "%a = f32[2,8] fusion("));
  EXPECT_TRUE(Has(ir, "%s = f32[8] fusion("));  // this device's sums, then all-reduced
  EXPECT_EQ(Count(ir, " all-reduce("), 1);
  EXPECT_EQ(Count(ir, " all-gather("), 1);  // rows 6..9 span two devices: gathered
  EXPECT_LT(PartitionError(kFusions), 1e-5);
}

const std::string kLoop = std::string("HloModule loop\n") + kAdd + R"(
cond {
  s = (s32[], f32[16,8], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[16,8], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[16,8] get-tuple-element(s), index=1
  acc = f32[] get-tuple-element(s), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  y = f32[16,8] sine(x)
  zero = f32[] constant(0)
  total = f32[] reduce(y, zero), dimensions={0,1}, to_apply=add
  acc2 = f32[] add(acc, total)
  ROOT out = (s32[], f32[16,8], f32[]) tuple(next, y, acc2)
}
ENTRY main {
  x = f32[16,8] parameter(0), sharding={devices=[8,1]<=[8]}
  z = s32[] constant(0)
  a = f32[] constant(0)
  init = (s32[], f32[16,8], f32[]) tuple(z, x, a)
  ROOT loop = (s32[], f32[16,8], f32[]) while(init), condition=cond, body=body
}
)";

TEST(SpmdRules, WhileLoopsCarryEachDevicesTiles) {
  const std::string ir = Partition(kLoop);
  EXPECT_TRUE(Has(ir, "%y = f32[2,8] sine("));
  EXPECT_EQ(Count(ir, " all-reduce("), 1);  // the body's sum over the batch, each trip
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_LT(PartitionError(kLoop), 1e-5);
}

// What the partitioner adds for an op keeps the op's framework name and source line.
TEST(SpmdRules, AddedInstructionsKeepTheOpsMetadata) {
  const std::string ir = Partition(std::string("HloModule md\n") + kAdd + R"(
ENTRY main {
  x = f32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}
  y = f32[16,4] parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT gw = f32[4,4] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot_general" source_file="f.py" source_line=3}
}
)");
  EXPECT_TRUE(Has(ir, "all-reduce(f32[4,4] %gw)"));
  EXPECT_EQ(
      Count(ir, "metadata={op_name=\"jit(f)/dot_general\" source_file=\"f.py\" source_line=3}"), 2);
}

// Between two tiled layouts by one all-to-all, not through the whole value: columns to rows,
// and in 3-D from the middle dimension to the last.
const std::string kAllToAll = std::string("HloModule a2a\n") + R"(
ENTRY main {
  x = f32[16,32] parameter(0), sharding={devices=[1,8]<=[8]}
  r = f32[16,32] copy(x), sharding={devices=[8,1]<=[8]}
  y = f32[4,16,24] parameter(1), sharding={devices=[1,8,1]<=[8]}
  z = f32[4,16,24] copy(y), sharding={devices=[1,1,8]<=[8]}
  ROOT t = (f32[16,32], f32[4,16,24]) tuple(r, z)
}
)";

TEST(SpmdRules, TiledToTiledIsOneAllToAll) {
  const std::string ir = Partition(kAllToAll);
  EXPECT_EQ(Count(ir, " all-to-all("), 2);
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_EQ(Count(ir, " dynamic-slice("), 0);
  EXPECT_TRUE(Has(ir, "%r.resharded = f32[2,32] reshape("));
  EXPECT_TRUE(Has(ir, "%z.resharded = f32[4,16,3] reshape("));
  EXPECT_EQ(PartitionError(kAllToAll), 0);
}

// A broadcast split along its operand's dimension (a position embedding split over the
// hidden features, as FSDP splits it) meeting a batch-split value: its operand is gathered
// (64 floats) and broadcast to each device's rows, not the broadcast's tiles exchanged by an
// all-to-all (2 x 64 floats per device pair).
const std::string kRebroadcast = std::string("HloModule rb\n") + R"(
ENTRY main {
  x = f32[16,64] parameter(0), sharding={devices=[8,1]<=[8]}
  pos = f32[64] parameter(1), sharding={devices=[8]<=[8]}
  b = f32[16,64] broadcast(pos), dimensions={1}
  ROOT a = f32[16,64] add(x, b)
}
)";

TEST(SpmdRules, ABroadcastWantedSplitAlongADimensionItCreatesGathersItsOperand) {
  const std::string ir = Partition(kRebroadcast);
  EXPECT_EQ(Count(ir, " all-to-all("), 0) << ir;
  EXPECT_TRUE(Has(ir, "f32[64] all-gather(f32[8] %pos)"));
  EXPECT_TRUE(Has(ir, "%b.shard = f32[2,64] broadcast(f32[64] "));
  EXPECT_EQ(PartitionError(kRebroadcast), 0);
}

// Two loops share one body and condition (HLO allows it): each is partitioned on its own
// copy of the global computations (found by scripts/difftest.py: "its body also serves
// another loop").
TEST(SpmdRules, LoopsSharingABodyEachGetACopy) {
  std::string shared = kLoop;
  shared.replace(shared.find("ROOT loop"), 0,
                 "l1 = (s32[], f32[16,8], f32[]) while(init), condition=cond, body=body\n  ");
  shared.replace(
      shared.find("ROOT loop = (s32[], f32[16,8], f32[]) while(init)"),
      std::string("ROOT loop = (s32[], f32[16,8], f32[]) while(init)").size(),
      "y = f32[16,8] get-tuple-element(l1), index=1\n  init2 = (s32[], f32[16,8], f32[]) "
      "tuple(z, y, a)\n  ROOT loop = (s32[], f32[16,8], f32[]) while(init2)");
  const std::string ir = Partition(shared);
  EXPECT_EQ(Count(ir, " while("), 2);
  EXPECT_EQ(Count(ir, " all-reduce("), 2);  // one in each copy of the body
  EXPECT_LT(PartitionError(shared), 1e-5);
}

// Two loops share a body and condition, the first over tiles, the second over a whole
// value: the second runs a copy of their global form (difftest seed 288960, the first campaign
// over sharded modules: "condition
// %cond parameter 0 is (s32[], f32[8,8]) but is given (s32[], f32[8,16])").
const std::string kTiledThenWholeLoops = std::string("HloModule wl, num_partitions=8\n") + R"(
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
  a = f32[8,16] parameter(0), sharding={devices=[1,2,4]<=[8] last_tile_dim_replicate}
  b = f32[8,16] parameter(1), sharding={replicated}
  zero = s32[] constant(0)
  t1 = (s32[], f32[8,16]) tuple(zero, a)
  l1 = (s32[], f32[8,16]) while(t1), condition=cond, body=body
  t2 = (s32[], f32[8,16]) tuple(zero, b)
  l2 = (s32[], f32[8,16]) while(t2), condition=cond, body=body
  r1 = f32[8,16] get-tuple-element(l1), index=1
  r2 = f32[8,16] get-tuple-element(l2), index=1
  ROOT r = (f32[8,16], f32[8,16]) tuple(r1, r2)
}
)";

TEST(SpmdRules, AWholeLoopSharingATiledLoopsBodyRunsItsGlobalForm) {
  const std::string ir = Partition(kTiledThenWholeLoops);
  EXPECT_EQ(Count(ir, " while("), 2);
  EXPECT_TRUE(Has(ir, "(s32[], f32[8,8]) while("));   // the first over its tiles
  EXPECT_TRUE(Has(ir, "(s32[], f32[8,16]) while("));  // the second whole
  EXPECT_LT(PartitionError(kTiledThenWholeLoops), 1e-6);
}

// The whole loop first (difftest seed 291279): the tiled one, partitioned after it, works on a
// copy, so the whole one keeps the global form it was given.
TEST(SpmdRules, ATiledLoopAfterAWholeOneWorksOnACopy) {
  std::string swapped = kTiledThenWholeLoops;
  const std::string first =
      "  t1 = (s32[], f32[8,16]) tuple(zero, a)\n"
      "  l1 = (s32[], f32[8,16]) while(t1), condition=cond, body=body\n";
  const size_t at = swapped.find(first);
  ASSERT_NE(at, std::string::npos);
  swapped.erase(at, first.size());
  swapped.insert(swapped.find("  r1 = "), first);
  const std::string ir = Partition(swapped);
  EXPECT_TRUE(Has(ir, "(s32[], f32[8,8]) while("));
  EXPECT_TRUE(Has(ir, "(s32[], f32[8,16]) while("));
  EXPECT_LT(PartitionError(swapped), 1e-6);
}

// Two fusions share one fused computation: the second is partitioned on a copy of its
// global form (partitioning the first changed it in place), and one whose body needs a
// collective runs replicated on its own global copy.
const std::string kSharedFusion = std::string("HloModule sf\n") + kAdd + R"(
negated {
  p0 = f32[16,8] parameter(0)
  ROOT n = f32[16,8] negate(p0)
}
shifted {
  r0 = f32[16,8] parameter(0)
  ROOT sl = f32[4,8] slice(r0), slice={[6:10], [0:8]}
}
ENTRY main {
  x = f32[16,8] parameter(0), sharding={devices=[8,1]<=[8]}
  y = f32[16,8] parameter(1), sharding={devices=[8,1]<=[8]}
  a = f32[16,8] fusion(x), kind=kLoop, calls=negated
  b = f32[16,8] fusion(y), kind=kLoop, calls=negated
  c = f32[4,8] fusion(a), kind=kLoop, calls=shifted
  d = f32[4,8] fusion(b), kind=kLoop, calls=shifted
  ROOT r = (f32[16,8], f32[16,8], f32[4,8], f32[4,8]) tuple(a, b, c, d)
}
)";

TEST(SpmdRules, FusionsSharingAComputationEachGetACopy) {
  const std::string ir = Partition(kSharedFusion);
  EXPECT_TRUE(Has(ir, "%a = f32[2,8] fusion(f32[2,8] %x), kind=kLoop, calls=%negated"));
  EXPECT_TRUE(Has(ir, "%b = f32[2,8] fusion(f32[2,8] %y), kind=kLoop, calls=%negated.1"));
  EXPECT_EQ(Count(ir, " all-gather("), 2);  // rows 6..9 of a and of b
  EXPECT_EQ(PartitionError(kSharedFusion), 0);
}

// The pass on an unannotated step: the batch input gets the split, weights stay whole.
TEST(SpmdRules, BatchShardingWritesTheInferredSplit) {
  auto m = hlo::ParseHlo(std::string("HloModule dp\n") + kAdd + R"(
ENTRY main {
  w = f32[32,16] parameter(0)
  x = f32[64,32] parameter(1)
  h = f32[64,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT gw = f32[32,16] dot(x, h), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
)",
                         "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  BatchShardingPass pass(kDevices);
  auto changed = pass.Run(m.value());
  ASSERT_TRUE(changed.ok() && changed.value());
  EXPECT_EQ(m->inferred_batch, 64);
  const std::string ir = hlo::PrintModule(m.value());
  EXPECT_TRUE(Has(ir, "%x = f32[64,32] parameter(1), sharding={devices=[8,1]<=[8]}"));
  EXPECT_FALSE(Has(ir, "%w = f32[32,16] parameter(0), sharding"));
}

// At batch 64 with 64 features, the batch-norm scale f32[64] has the batch's length: a
// floating-point vector stays whole; the s32 labels are split with the images.
TEST(SpmdRules, BatchShardingKeepsAFeatureVectorOfTheBatchsLengthWhole) {
  auto m = hlo::ParseHlo(R"(HloModule bn
ENTRY main {
  w = f32[64,64] parameter(0)
  g = f32[64] parameter(1)
  b = f32[64] parameter(2)
  x = f32[64,64] parameter(3)
  labels = s32[64] parameter(4)
  h = f32[64,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bn = (f32[64,64], f32[64], f32[64]) batch-norm-training(h, g, b), epsilon=0.001, feature_index=1
  y = f32[64,64] get-tuple-element(bn), index=0
  ROOT r = (f32[64,64], s32[64]) tuple(y, labels)
}
)",
                         "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  BatchShardingPass pass(kDevices);
  ASSERT_TRUE(pass.Run(m.value()).ok());
  const std::string ir = hlo::PrintModule(m.value());
  EXPECT_TRUE(Has(ir, "%x = f32[64,64] parameter(3), sharding={devices=[8,1]<=[8]}"));
  EXPECT_TRUE(Has(ir, "%labels = s32[64] parameter(4), sharding={devices=[8]<=[8]}"));
  EXPECT_FALSE(Has(ir, "%g = f32[64] parameter(1), sharding"));
  EXPECT_FALSE(Has(ir, "%b = f32[64] parameter(2), sharding"));
}

// BERT as tpusim writes it: token ids first, then weights and a position table added by
// broadcast, whose Adam moments come last. The integer ids name the batch (256), not the
// last float parameter (the table's moment, 128 rows); the embedding table a gather reads
// is a weight.
TEST(SpmdRules, BatchShardingTakesTheBatchFromTheTokenIds) {
  auto m = hlo::ParseHlo(R"(HloModule bert
ENTRY main {
  tokens = s32[256,128] parameter(0)
  table = f32[1000,16] parameter(1)
  pos = f32[128,16] parameter(2)
  pos_m = f32[128,16] parameter(3)
  e = f32[256,128,16] gather(table, tokens), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,16}
  p = f32[256,128,16] broadcast(pos), dimensions={1,2}
  s = f32[256,128,16] add(e, p)
  ROOT r = (f32[256,128,16], f32[128,16]) tuple(s, pos_m)
}
)",
                         "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  BatchShardingPass pass(kDevices);
  ASSERT_TRUE(pass.Run(m.value()).ok());
  EXPECT_EQ(m->inferred_batch, 256) << m->batch_not_split_reason;
  const std::string ir = hlo::PrintModule(m.value());
  EXPECT_TRUE(Has(ir, "%tokens = s32[256,128] parameter(0), sharding={devices=[8,1]<=[8]}"));
  EXPECT_FALSE(Has(ir, "%table = f32[1000,16] parameter(1), sharding"));
}

// The embedding gradient: a scatter-add of each device's rows into zeros, all-reduced; into
// a table that is not zeros, the table is added once after the sum.
const std::string kScatterAdd = std::string("HloModule sa\n") + kAdd + R"(
ENTRY main {
  ids = s32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}
  g = f32[16,4,8] parameter(1), sharding={devices=[8,1,1]<=[8]}
  t = f32[10,8] parameter(2)
  zero = f32[] constant(0)
  z = f32[10,8] broadcast(zero), dimensions={}
  d = f32[10,8] scatter(z, ids, g), update_window_dims={2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=add
  u = f32[10,8] scatter(t, ids, g), update_window_dims={2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=add
  ROOT r = (f32[10,8], f32[10,8]) tuple(d, u)
}
)";

// take_along_axis over logits split by vocabulary (an FSDP LM head's), labels split by
// batch: the logits are resharded by batch with one all-to-all, not gathered whole.
TEST(SpmdRules, TakeAlongAxisOverLogitsSplitByVocabularyReshardsThem) {
  const std::string text = std::string("HloModule g\n") + R"(
ENTRY main {
  logits = f32[16,64] parameter(0), sharding={devices=[1,8]<=[8]}
  labels = s32[16,1] parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT g = f32[16] gather(logits, labels), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}
}
)";
  const std::string ir = Partition(text);
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_EQ(Count(ir, " all-to-all("), 1);
  EXPECT_TRUE(Has(ir, "%g = f32[2] gather("));
  EXPECT_LT(PartitionError(text), 1e-6);
}

// An embedding lookup under FSDP: the table split along its rows, the token ids by example.
// The table is gathered whole (as a dot's split weights are) and each device looks up its
// own examples only.
TEST(SpmdRules, LookupsIntoARowSplitTableStayOnEachDevicesExamples) {
  const std::string text = std::string("HloModule e\n") + R"(
ENTRY main {
  t = f32[64,32] parameter(0), sharding={devices=[8,1]<=[8]}
  ids = s32[16,4] parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT g = f32[16,4,32] gather(t, ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,32}
}
)";
  const std::string ir = Partition(text);
  EXPECT_TRUE(Has(ir, "all-gather(f32[8,32] %t)"));
  EXPECT_FALSE(Has(ir, "all-gather(s32[2,4] %ids)"));
  EXPECT_TRUE(Has(ir, "%g = f32[2,4,32] gather("));
  EXPECT_LT(PartitionError(text), 1e-6);
}

TEST(SpmdRules, ScatterAddOfEachDevicesRowsIsAllReduced) {
  const std::string ir = Partition(kScatterAdd);
  EXPECT_EQ(Count(ir, " all-reduce("), 2);
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_TRUE(Has(ir, "%u.plus-operand = f32[10,8] add("));
  EXPECT_LT(PartitionError(kScatterAdd), 1e-5);
}

// A scan's time-major sequence: its leading dimension is the loop's step, not a batch.
TEST(SpmdRules, BatchShardingLeavesAScanWhole) {
  auto m = hlo::ParseHlo(R"(HloModule scan
cond {
  s = (s32[], f32[16,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(16)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[16,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  xs = f32[16,4] get-tuple-element(s), index=1
  z = s32[] constant(0)
  row = f32[1,4] dynamic-slice(xs, i, z), dynamic_slice_sizes={1,4}
  t = f32[1,4] tanh(row)
  u = f32[16,4] dynamic-update-slice(xs, t, i, z)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT out = (s32[], f32[16,4]) tuple(next, u)
}
ENTRY main {
  xs = f32[16,4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[16,4]) tuple(z, xs)
  ROOT loop = (s32[], f32[16,4]) while(init), condition=cond, body=body
}
)",
                         "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  BatchShardingPass pass(kDevices);
  auto changed = pass.Run(m.value());
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(changed.value());
  EXPECT_EQ(m->inferred_batch, 0);
  EXPECT_EQ(m->batch_not_split_reason,
            "the leading dimension (16) of %xs is indexed by %row at a computed position: a "
            "time or sequence axis (a scan), not a batch");
}

}  // namespace
}  // namespace tpusim::spmd
