// SPMD partitioning over a 2-D mesh (2 x 4: a batch over "data", features over "model"), as
// JAX shards a dense layer with Mesh(('data', 'model')): IR in, IR out, and values of the
// per-device programs against the global module (spmd_test_util.h).
#include <gtest/gtest.h>

#include <string>

#include "test/compiler/spmd/spmd_test_util.h"

namespace tpusim::spmd {
namespace {

// Device d sits at (data d / 4, model d % 4). x: rows over data; w1: columns over model;
// w2: rows over model (Megatron's column then row parallel, with a data-parallel batch).
// The backward pass: dy = y - t, the weight gradients and the input gradient.
const std::string kMeshMlp = std::string("HloModule mesh, num_partitions=8\n") + kAdd + R"(
ENTRY main {
  x = f32[64,32] parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  w1 = f32[32,64] parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  b1 = f32[64] parameter(2), sharding={devices=[4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  w2 = f32[64,32] parameter(3), sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  t = f32[64,32] parameter(4), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  h = f32[64,64] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,64] broadcast(b1), dimensions={1}
  hb = f32[64,64] add(h, bb)
  a = f32[64,64] tanh(hb)
  y = f32[64,32] dot(a, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dy = f32[64,32] subtract(y, t)
  gw2 = f32[64,32] dot(a, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  da = f32[64,64] dot(dy, w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  one = f32[] constant(1)
  ones = f32[64,64] broadcast(one), dimensions={}
  aa = f32[64,64] multiply(a, a)
  dt = f32[64,64] subtract(ones, aa)
  dh = f32[64,64] multiply(da, dt)
  zero = f32[] constant(0)
  gb1 = f32[64] reduce(dh, zero), dimensions={0}, to_apply=add
  gw1 = f32[32,64] dot(x, dh), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  hT = f32[64,64] transpose(dh), dimensions={1,0}
  ROOT r = (f32[32,64], f32[64], f32[64,32], f32[64,64]) tuple(gw1, gb1, gw2, hT)
}
)";

TEST(SpmdMesh, ADenseLayerOverDataAndModelAxesRunsOnEachDevicesTiles) {
  const std::string ir = Partition(kMeshMlp);
  // Every dot on tiles: the hidden layer is [32 rows, 16 features] per device.
  EXPECT_TRUE(Has(ir, "%h = f32[32,16] dot(f32[32,32] %x, f32[32,16] %w1)"));
  EXPECT_TRUE(Has(ir, "%y = f32[32,32] dot("));
  EXPECT_TRUE(Has(ir, "%gw2 = f32[16,32] dot("));
  EXPECT_TRUE(Has(ir, "%gw1 = f32[32,16] dot("));
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  // The bias, held for every row, is broadcast to the device's rows only: no collective, and
  // the whole [64,16] broadcast is never written.
  EXPECT_TRUE(Has(ir, "%bb.shard = f32[32,16] broadcast(f32[16] %b1), dimensions={1}"));
  // y's partial sums over the model axis; the gradients' over the data axis.
  EXPECT_TRUE(Has(ir, "%y.all-reduce = f32[32,32] all-reduce(f32[32,32] %y), channel_id="));
  EXPECT_TRUE(Has(ir, "replica_groups={{0,1,2,3},{4,5,6,7}}"));
  EXPECT_TRUE(Has(ir, "%gw2.all-reduce = f32[16,32] all-reduce(f32[16,32] %gw2)"));
  EXPECT_TRUE(Has(ir, "%gb1.all-reduce = f32[16] all-reduce(f32[16] %gb1)"));
  EXPECT_TRUE(Has(ir, "replica_groups={{0,4},{1,5},{2,6},{3,7}}"));
  // The transpose moves the data and model tiles with their dimensions.
  EXPECT_TRUE(Has(ir, "%hT = f32[16,32] transpose("));
  EXPECT_LT(PartitionError(kMeshMlp), 1e-4);  // sums over 64 rows, in another order
}

// A Megatron LM head's input gradient: dlogits split by batch over data and whole along the
// vocabulary, the head's weights split by vocabulary over model. Each device slices its
// vocabulary of dlogits locally and the partial sums go round the model axis: no gather.
TEST(SpmdMesh, AContractionSplitInOneOperandSlicesTheOther) {
  const std::string text = std::string("HloModule mesh, num_partitions=8\n") + R"(
ENTRY main {
  g = f32[16,64] parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  w = f32[32,64] parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  ROOT dx = f32[16,32] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
)";
  const std::string ir = Partition(text);
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_TRUE(Has(ir, "dynamic-slice(f32[8,64] %g,"));
  EXPECT_TRUE(Has(ir, "%dx = f32[8,32] dot(f32[8,16] "));
  EXPECT_TRUE(Has(ir, "replica_groups={{0,1,2,3},{4,5,6,7}}"));
  EXPECT_LT(PartitionError(text), 1e-5);
}

// Softmax-like rows over logits split by batch over data and by vocabulary over model: the row
// sums, split by batch only, are sliced to each device's logits (no gather of the logits), and the
// result keeps the logits' layout, as XLA's propagation prefers the more partitioned operand.
TEST(SpmdMesh, ElementwiseOperandsMeetInTheMostSplitLayout) {
  const std::string text = std::string("HloModule mesh, num_partitions=8\n") + kAdd + R"(
ENTRY main {
  l = f32[16,64] parameter(0), sharding={devices=[2,4]<=[8]}
  e = f32[16,64] tanh(l)
  zero = f32[] constant(0)
  s = f32[16] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[16,64] broadcast(s), dimensions={0}
  ROOT p = f32[16,64] multiply(sb, e)
}
)";
  const std::string ir = Partition(text);
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_TRUE(Has(ir, "%p = f32[8,16] multiply("));
  EXPECT_LT(PartitionError(text), 1e-5);
}

// take_along_axis over logits split by batch over data and by vocabulary over model, labels
// split by batch: each device gathers from its vocabulary slice with the labels moved into it
// (out-of-slice ones give zero) and the model axis sums the parts; no logits gathered. Labels
// past either end are clamped first, as the gather clamps them.
TEST(SpmdMesh, TakeAlongAxisOverVocabularySplitLogitsGathersEachSlice) {
  const std::string text = std::string("HloModule mesh, num_partitions=8\n") + kAdd + R"(
ENTRY main {
  l = f32[16,64] parameter(0), sharding={devices=[2,4]<=[8]}
  y = s32[16,1] parameter(1), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  ROOT g = f32[16] gather(l, y), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}
}
)";
  const std::string ir = Partition(text);
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_TRUE(Has(ir, "%g = f32[8] gather(f32[8,16] %l,"));
  EXPECT_TRUE(Has(ir, "replica_groups={{0,1,2,3},{4,5,6,7}}"));
  EXPECT_LT(PartitionError(text), 1e-6);
}

// A contraction split over more devices than it has parts (the model axis's 4 copies of
// each half of the rows): partial sums are combined once per part, in groups of two.
TEST(SpmdMesh, PartialSumsAreCombinedOncePerPart) {
  const std::string text = std::string("HloModule mesh, num_partitions=8\n") + R"(
ENTRY main {
  a = f32[16,64] parameter(0), sharding={devices=[1,2,4]<=[8] last_tile_dim_replicate}
  b = f32[64,8] parameter(1), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  ROOT c = f32[16,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  const std::string ir = Partition(text);
  EXPECT_TRUE(Has(ir, "%c = f32[16,8] dot(f32[16,32] %a, f32[32,8] %b)"));
  EXPECT_TRUE(Has(ir, "replica_groups={{0,4},{1,5},{2,6},{3,7}}"));
  EXPECT_LT(PartitionError(text), 1e-5);
}

// Operands whose contracting tiles do not line up (rows of b split where a's columns are
// whole) keep the replicated path: correct, with gathers.
TEST(SpmdMesh, TilesThatDoNotLineUpAreGathered) {
  const std::string text = std::string("HloModule mesh, num_partitions=8\n") + R"(
ENTRY main {
  a = f32[16,64] parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  b = f32[64,8] parameter(1), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  ROOT c = f32[16,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  const std::string ir = Partition(text);
  EXPECT_GE(Count(ir, " all-gather("), 1);
  EXPECT_LT(PartitionError(text), 1e-5);
}

// Self-attention over the same mesh: the batch over 'data', the heads over 'model'
// (Megatron's attention). Projections split by heads, [B, S, H] reshaped to [B, S, heads,
// H/heads] and transposed, the scores and the context batched over (batch, head) on each
// device, the output projection's partial sums all-reduced over 'model'.
const std::string kMeshAttention = std::string("HloModule attn, num_partitions=8\n") + kAdd + R"(
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

ENTRY main {
  x = f32[4,16,64] parameter(0), sharding={devices=[2,1,1,4]<=[8] last_tile_dim_replicate}
  wq = f32[64,64] parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  wk = f32[64,64] parameter(2), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  wv = f32[64,64] parameter(3), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  wo = f32[64,64] parameter(4), sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  x2 = f32[64,64] reshape(x)
  q2 = f32[64,64] dot(x2, wq), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  k2 = f32[64,64] dot(x2, wk), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  v2 = f32[64,64] dot(x2, wv), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  q4 = f32[4,16,8,8] reshape(q2)
  k4 = f32[4,16,8,8] reshape(k2)
  v4 = f32[4,16,8,8] reshape(v2)
  q = f32[4,8,16,8] transpose(q4), dimensions={0,2,1,3}
  k = f32[4,8,16,8] transpose(k4), dimensions={0,2,1,3}
  v = f32[4,8,16,8] transpose(v4), dimensions={0,2,1,3}
  s = f32[4,8,16,16] dot(q, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  ninf = f32[] constant(-inf)
  m = f32[4,8,16] reduce(s, ninf), dimensions={3}, to_apply=max
  mb = f32[4,8,16,16] broadcast(m), dimensions={0,1,2}
  d = f32[4,8,16,16] subtract(s, mb)
  e = f32[4,8,16,16] exponential(d)
  zero = f32[] constant(0)
  z = f32[4,8,16] reduce(e, zero), dimensions={3}, to_apply=add
  zb = f32[4,8,16,16] broadcast(z), dimensions={0,1,2}
  p = f32[4,8,16,16] divide(e, zb)
  c = f32[4,8,16,8] dot(p, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  ct = f32[4,16,8,8] transpose(c), dimensions={0,2,1,3}
  c2 = f32[64,64] reshape(ct)
  o2 = f32[64,64] dot(c2, wo), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT o = f32[4,16,64] reshape(o2)
}
)";

TEST(SpmdMesh, AttentionWithHeadsOverTheModelAxisRunsOnEachDevicesHeads) {
  const std::string ir = Partition(kMeshAttention);
  // Each device: 2 of the 4 sequences, 2 of the 8 heads.
  EXPECT_TRUE(Has(ir, "%x2 = f32[32,64] reshape(f32[2,16,64] %x)"));
  EXPECT_TRUE(Has(ir, "%q4 = f32[2,16,2,8] reshape(f32[32,16] %q2)"));
  EXPECT_TRUE(Has(ir, "%s = f32[2,2,16,16] dot("));
  EXPECT_TRUE(Has(ir, "%c = f32[2,2,16,8] dot("));
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  // The only collective: the output projection's sums over 'model'.
  EXPECT_EQ(Count(ir, " all-reduce("), 1);
  EXPECT_TRUE(Has(ir, "replica_groups={{0,1,2,3},{4,5,6,7}}"));
  EXPECT_LT(PartitionError(kMeshAttention), 1e-5);
}

// Convolutions on the mesh: images over 'data', the first layer's output channels over
// 'model' (column parallel), the second's input channels over 'model' (row parallel: partial
// sums all-reduced over 'model'), and its weight gradient over the data axis.
const std::string kMeshConv = std::string("HloModule conv, num_partitions=8\n") + R"(
ENTRY main {
  x = f32[8,8,8,16] parameter(0), sharding={devices=[2,1,1,1,4]<=[8] last_tile_dim_replicate}
  k1 = f32[3,3,16,32] parameter(1), sharding={devices=[1,1,1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  k2 = f32[3,3,32,16] parameter(2), sharding={devices=[1,1,4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  h = f32[8,8,8,32] convolution(x, k1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  a = f32[8,8,8,32] tanh(h)
  y = f32[8,8,8,16] convolution(a, k2), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  g = f32[3,3,32,16] convolution(a, y), window={size=8x8 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
  ROOT r = (f32[8,8,8,16], f32[3,3,32,16]) tuple(y, g)
}
)";

TEST(SpmdMesh, ConvolutionsSplitImagesAndChannelsOverTheMeshAxes) {
  const std::string ir = Partition(kMeshConv);
  EXPECT_TRUE(Has(ir, "%h = f32[4,8,8,8] convolution(f32[4,8,8,16] %x, f32[3,3,16,8] %k1)"));
  EXPECT_TRUE(Has(ir, "%y = f32[4,8,8,16] convolution(f32[4,8,8,8] %a, f32[3,3,8,16] %k2)"));
  EXPECT_TRUE(Has(ir, "%g = f32[3,3,8,16] convolution("));
  EXPECT_EQ(Count(ir, " all-gather("), 0);
  EXPECT_TRUE(Has(ir, "replica_groups={{0,1,2,3},{4,5,6,7}}"));      // y's sums over 'model'
  EXPECT_TRUE(Has(ir, "replica_groups={{0,4},{1,5},{2,6},{3,7}}"));  // g's over 'data'
  // g sums 512 products per element (values in the hundreds): f32 sums in another order.
  EXPECT_LT(PartitionError(kMeshConv), 1e-3);
}

}  // namespace
}  // namespace tpusim::spmd
