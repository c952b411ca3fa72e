// SPMD partitioner: IR in, IR out for each sharding kind, and values of the per-device
// programs against the evaluator run on the global module (spmd_test_util.h).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test/compiler/spmd/spmd_test_util.h"

namespace tpusim::spmd {
namespace {

// Data parallel (jit over a batch-sharded input): the layer runs on each device's rows, the
// weight gradient and the loss are partial sums, all-reduced.
const std::string kDataParallel = std::string("HloModule dp\n") + kAdd + R"(
ENTRY main {
  x = f32[64,32] parameter(0), sharding={devices=[8,1]<=[8]}
  w = f32[32,16] parameter(1), sharding={replicated}
  h = f32[64,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[64,16] tanh(h)
  gw = f32[32,16] dot(x, t), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  loss = f32[] reduce(t, zero), dimensions={0,1}, to_apply=add
  ROOT r = (f32[32,16], f32[], f32[64,16]) tuple(gw, loss, t)
}
)";

TEST(SpmdPartitioner, DataParallelSplitsRowsAndAllReducesGradients) {
  std::string ir = Partition(kDataParallel);
  EXPECT_TRUE(Has(ir, "num_partitions=8"));
  EXPECT_TRUE(Has(ir, "%x = f32[8,32] parameter(0), sharding={devices=[8,1]<=[8]}"));
  EXPECT_TRUE(Has(ir, "%h = f32[8,16] dot("));
  EXPECT_EQ(Count(ir, " all-reduce("), 2);  // the weight gradient and the loss
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_TRUE(Has(ir, "sharding={{replicated}, {replicated}, {devices=[8,1]<=[8]}}"));
  EXPECT_LT(PartitionError(kDataParallel), 1e-4);
}

// Megatron: column-parallel w1 (split along its output features), row-parallel w2 (along
// its input features): the second dot's partial sums are all-reduced.
const std::string kMegatron = std::string("HloModule tp\n") + R"(
ENTRY main {
  x = f32[16,32] parameter(0), sharding={replicated}
  w1 = f32[32,64] parameter(1), sharding={devices=[1,8]<=[8]}
  w2 = f32[64,32] parameter(2), sharding={devices=[8,1]<=[8]}
  h = f32[16,64] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  a = f32[16,64] maximum(h, h)
  ROOT y = f32[16,32] dot(a, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";

TEST(SpmdPartitioner, MegatronColumnThenRowParallel) {
  std::string ir = Partition(kMegatron);
  EXPECT_TRUE(Has(ir, "%h = f32[16,8] dot("));
  EXPECT_EQ(Count(ir, " all-reduce("), 1);
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_LT(PartitionError(kMegatron), 1e-5);
}

// FSDP: a parameter sharded along its first dimension is all-gathered before use; a tiled
// value meets a whole one by each device's dynamic slice, and a partially replicated one that
// holds its tile by a slice of that; rows to columns by one all-to-all.
const std::string kReshard = std::string("HloModule fsdp\n") + R"(
ENTRY main {
  x = f32[64,32] parameter(0), sharding={devices=[8,1]<=[8]}
  w = f32[32,16] parameter(1), sharding={devices=[8,1]<=[8]}
  b = f32[64,16] parameter(2), sharding={replicated}
  c = f32[64,16] parameter(3), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  h = f32[64,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[64,16] add(h, b)
  t = f32[64,16] add(s, c)
  ROOT o = f32[64,16] copy(t), sharding={devices=[1,8]<=[8]}
}
)";

TEST(SpmdPartitioner, ReshardsBetweenLayouts) {
  std::string ir = Partition(kReshard);
  EXPECT_TRUE(Has(ir, "%w = f32[4,16] parameter(1)"));
  EXPECT_TRUE(Has(ir, "all-gather(f32[4,16] %w)"));   // FSDP's gather of the weights
  EXPECT_FALSE(Has(ir, "all-gather(f32[8,32] %x)"));  // the rows stay split
  EXPECT_TRUE(Has(ir, "dynamic-slice(f32[64,16] %b"));
  EXPECT_TRUE(Has(ir, "%c = f32[32,16] parameter(3)"));
  // The partially replicated operand (devices 0..3 hold rows 0..31, 4..7 the rest): each
  // device's 8 rows lie in the half it holds, sliced out with no collective.
  EXPECT_TRUE(Has(ir, "%c.shard = f32[8,16] dynamic-slice(f32[32,16] %c,"));
  EXPECT_FALSE(Has(ir, "all-gather(f32[32,16] %c)"));
  // Rows to the output's columns: each device's 8 rows cut into 8 chunks of 2 columns, one
  // to each device, stacked back in device order.
  EXPECT_TRUE(Has(ir,
                  "%o.chunks-first = f32[8,8,2] transpose(f32[8,8,2] %o.chunks), "
                  "dimensions={1,0,2}"));
  EXPECT_TRUE(Has(ir, "all-to-all(f32[8,8,2] %o.chunks-first)"));
  EXPECT_TRUE(Has(ir, "%o.resharded = f32[64,2] reshape("));
  EXPECT_FALSE(Has(ir, "f32[64,16] all-gather(f32[8,16] %o)"));
  EXPECT_LT(PartitionError(kReshard), 1e-5);
}

// FSDP with the weight split along its columns (the larger dimension) beside a batch split
// over the same devices: the smaller operand is gathered and the larger keeps its split. A
// layer gathers its weights and keeps the batch split; an LM head whose weights outweigh the
// activations gathers those and splits the vocabulary (as XLA does: gpt_fsdp8_b16).
const std::string kFsdpColumns = std::string("HloModule fsdp\n") + R"(
ENTRY main {
  x = f32[64,32] parameter(0), sharding={devices=[8,1]<=[8]}
  w = f32[32,16] parameter(1), sharding={devices=[1,8]<=[8]}
  v = f32[32,512] parameter(2), sharding={devices=[1,8]<=[8]}
  h = f32[64,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  l = f32[64,512] dot(x, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = (f32[64,16], f32[64,512]) tuple(h, l)
}
)";

TEST(SpmdPartitioner, FsdpGathersTheSmallerOperandOfADot) {
  std::string ir = Partition(kFsdpColumns);
  EXPECT_TRUE(Has(ir, "all-gather(f32[32,2] %w)"));
  EXPECT_TRUE(Has(ir, "%h = f32[8,16] dot(f32[8,32] %x,"));  // the batch stays split
  EXPECT_TRUE(Has(ir, "all-gather(f32[8,32] %x)"));
  EXPECT_TRUE(Has(ir, "%l = f32[64,64] dot(f32[64,32] "));  // the columns stay split
  EXPECT_FALSE(Has(ir, "all-gather(f32[32,64] %v)"));
  EXPECT_LT(PartitionError(kFsdpColumns), 1e-5);
}

// Two dots read one FSDP-split weight (a forward and a backward dot): it is gathered once and
// both read the gathered copy, as XLA's reshard cache makes them.
const std::string kFsdpTwoReaders = std::string("HloModule fsdp2\n") + R"(
ENTRY main {
  x = f32[64,32] parameter(0), sharding={devices=[8,1]<=[8]}
  y = f32[64,32] parameter(1), sharding={devices=[8,1]<=[8]}
  w = f32[32,16] parameter(2), sharding={devices=[1,8]<=[8]}
  h = f32[64,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  g = f32[64,16] dot(y, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[64,16], f32[64,16]) tuple(h, g)
}
)";

TEST(SpmdPartitioner, AWeightTwoDotsReadIsGatheredOnce) {
  std::string ir = Partition(kFsdpTwoReaders);
  EXPECT_EQ(Count(ir, "all-gather(f32[32,2] %w)"), 1) << ir;
  EXPECT_LT(PartitionError(kFsdpTwoReaders), 1e-5);
}

// An FSDP optimizer step: the weight gradient is a partial sum over the split batch, and
// every reader (momentum, then the update of the split weight, through a transpose) takes it
// in the weight's rows. It is reduce-scattered into those rows, as XLA's propagation makes
// it, not all-reduced whole and sliced; the loss, read whole, keeps its all-reduce.
const std::string kFsdpUpdate = std::string("HloModule fsdp_update\n") + kAdd + R"(
ENTRY main {
  x = f32[64,32] parameter(0), sharding={devices=[8,1]<=[8]}
  dy = f32[64,1024] parameter(1), sharding={devices=[8,1]<=[8]}
  w = f32[1024,32] parameter(2), sharding={devices=[8,1]<=[8]}
  m = f32[32,1024] parameter(3), sharding={devices=[1,8]<=[8]}
  gw = f32[32,1024] dot(x, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  beta = f32[] constant(0.9)
  betas = f32[32,1024] broadcast(beta), dimensions={}
  decayed = f32[32,1024] multiply(m, betas)
  m2 = f32[32,1024] add(decayed, gw)
  step = f32[1024,32] transpose(m2), dimensions={1,0}
  w2 = f32[1024,32] subtract(w, step)
  zero = f32[] constant(0)
  loss = f32[] reduce(x, zero), dimensions={0,1}, to_apply=add
  ROOT r = (f32[1024,32], f32[32,1024], f32[]) tuple(w2, m2, loss)
}
)";

TEST(SpmdPartitioner, FsdpGradientsAreReduceScatteredIntoTheShardsTheirReadersTake) {
  std::string ir = Partition(kFsdpUpdate);
  EXPECT_TRUE(Has(ir, "f32[32,128] reduce-scatter(f32[32,1024] %gw)")) << ir;
  EXPECT_TRUE(Has(ir, "replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={1}"));
  EXPECT_FALSE(Has(ir, "all-reduce(f32[32,1024]"));
  EXPECT_TRUE(Has(ir, "f32[] all-reduce("));  // the loss
  EXPECT_LT(PartitionError(kFsdpUpdate), 1e-5);
}

// shard_map (Shardy's form): the body runs as written on each device's shard; constants
// inside it are used as they are.
const std::string kShardMap =
    std::string(R"(HloModule sm, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=8]>}}
)") +
    kAdd + R"(
body {
  p = f32[8,16] parameter(0)
  ag = f32[64,16] all-gather(p), channel_id=1, replica_groups=mesh['x'=8] {'x'}, dimensions={0}, use_global_device_ids=true
  two = f32[] constant(2)
  twos = f32[64,16] broadcast(two), dimensions={}
  m = f32[64,16] multiply(ag, twos)
  ROOT rs = f32[8,16] reduce-scatter(m), channel_id=2, replica_groups=mesh['x'=8] {'x'}, use_global_device_ids=true, dimensions={0}, to_apply=add
}

ENTRY main {
  x = f32[64,16] parameter(0), sharding={devices=[8,1]<=[8]}
  l = f32[8,16] custom-call(x), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
  c = f32[8,16] call(l), to_apply=body
  ROOT g = f32[64,16] custom-call(c), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
}
)";

TEST(SpmdPartitioner, ShardMapBodiesRunAsWritten) {
  std::string ir = Partition(kShardMap);
  EXPECT_FALSE(Has(ir, "custom-call"));
  EXPECT_FALSE(Has(ir, " call("));
  EXPECT_TRUE(Has(ir, "%x = f32[8,16] parameter(0)"));
  EXPECT_TRUE(Has(ir, "all-gather(f32[8,16] %x)"));
  EXPECT_TRUE(Has(ir, "sharding={devices=[8,1]<=[8]}"));
  EXPECT_LT(PartitionError(kShardMap), 1e-5);
}

// XLA's own annotations: Sharding custom-calls and the manual region of
// SPMDFullToShardShape / SPMDShardToFullShape.
const std::string kManual = std::string("HloModule manual\n") + R"(
ENTRY main {
  x = f32[64,16] parameter(0)
  s = f32[64,16] custom-call(x), custom_call_target="Sharding", sharding={devices=[8,1]<=[8]}
  l = f32[8,16] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  n = f32[8,16] negate(l)
  ROOT g = f32[64,16] custom-call(n), custom_call_target="SPMDShardToFullShape", sharding={devices=[8,1]<=[8]}
}
)";

TEST(SpmdPartitioner, XlaManualRegions) {
  std::string ir = Partition(kManual);
  EXPECT_TRUE(Has(ir, "%n = f32[8,16] negate("));
  EXPECT_LT(PartitionError(kManual), 1e-6);
}

TEST(SpmdPartitioner, ModulesWithoutShardingsAreLeftAlone) {
  auto m = hlo::ParseHlo(
      "HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n"
      "  ROOT n = f32[8] negate(p)\n}\n",
      "m.hlo");
  ASSERT_TRUE(m.ok());
  SpmdPartitionerPass pass(kDevices);
  auto r = pass.Run(m.value());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value());
}

TEST(SpmdPartitioner, ErrorsNameTheInstructionAndSharding) {
  auto m = hlo::ParseHlo(
      "HloModule m\nENTRY e {\n"
      "  p = f32[12] parameter(0), sharding={devices=[8]<=[8]}\n"
      "  ROOT n = f32[12] negate(p)\n}\n",
      "m.hlo");
  ASSERT_TRUE(m.ok());
  SpmdPartitionerPass pass(kDevices);
  auto r = pass.Run(m.value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "%p: sharding {devices=[8]<=[8]} splits dimension 0 of f32[12] into 8 unequal parts "
            "(XLA pads them; tpusim needs equal tiles)");
}

std::string Read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// What JAX printed (examples/jax/, from scripts/jax/gen.py), partitioned and checked by value.
TEST(SpmdPartitioner, JaxModulesMatchTheirGlobalPrograms) {
  for (const char* name :
       {"mlp_dp8_b1024", "tp_mlp_shardmap8", "mlp_pmap8", "collectives_shardmap8"}) {
    SCOPED_TRACE(name);
    const std::string text = Read(std::string("examples/jax/") + name + ".pre.hlo");
    ASSERT_FALSE(text.empty());
    EXPECT_LT(PartitionError(text), 1e-4);
  }
}

// The jit step over a batch-sharded input is data parallel without a gathered activation.
TEST(SpmdPartitioner, JaxDataParallelStepGathersNothing) {
  std::string ir = Partition(Read("examples/jax/mlp_dp8_b1024.pre.hlo"));
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_EQ(Count(ir, " all-reduce("), 7);  // 3 weights, 3 biases, the loss
  EXPECT_TRUE(Has(ir, "%x.1 = f32[128,784]{1,0} parameter(6)"));
}

}  // namespace
}  // namespace tpusim::spmd
