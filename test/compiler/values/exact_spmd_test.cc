// Partitioned programs simulated with values: each core gets its tiles of the global
// arguments, and its results are compared with its tiles of the reference evaluator's
// results of the global module (sim_values_util.h, cli/step_check.cc). Also all-to-all.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

std::string Read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// shard_map's all_to_all (MoE dispatch): chunk j of each device's rows to device j, over ICI.
TEST(ExactSpmd, ShardMapAllToAll) {
  testing::ExpectMatch(Read("examples/jax/all_to_all_shardmap8.pre.hlo"), 1e-12);  // bit for bit
}

// The tuple form XLA's optimized dumps hold: operand j to member j, element i from member i.
TEST(ExactSpmd, TupleAllToAll) {
  // Operand j of core r: x (j + 1) + r, so element i of core q's result, x (q + 1) + i, says
  // who sent it.
  std::string text =
      "HloModule m, replica_count=8\nENTRY %main (x: f32[8,128]) -> (f32[8,128], f32[8,128]) {\n"
      "  %x = f32[8,128]{1,0} parameter(0)\n  %id = u32[] replica-id()\n"
      "  %idf = f32[] convert(%id)\n"
      "  %r = f32[8,128]{1,0} broadcast(%idf), dimensions={}\n";
  std::string ops, shapes;
  for (int j = 0; j < 8; ++j) {
    const std::string k = std::to_string(j);
    text += "  %k" + k + " = f32[] constant(" + std::to_string(j + 1) + ")\n  %c" + k +
            " = f32[8,128]{1,0} broadcast(%k" + k + "), dimensions={}\n  %m" + k +
            " = f32[8,128]{1,0} multiply(%x, %c" + k + ")\n  %p" + k + " = f32[8,128]{1,0} add(%m" +
            k + ", %r)\n";
    ops += std::string(j ? ", " : "") + "%p" + k;
    shapes += std::string(j ? ", " : "") + "f32[8,128]{1,0}";
  }
  text += "  %a = (" + shapes + ") all-to-all(" + ops + "), replica_groups={{0,1,2,3,4,5,6,7}}\n";
  for (int j : {0, 3, 7}) {
    text += "  %g" + std::to_string(j) +
            " = f32[8,128]{1,0} get-tuple-element(%a), index=" + std::to_string(j) + "\n";
  }
  text +=
      "  %s = f32[8,128]{1,0} add(%g0, %g3)\n  %t = f32[8,128]{1,0} multiply(%s, %g7)\n"
      "  ROOT %o = (f32[8,128], f32[8,128]) tuple(%t, %g3)\n}\n";
  testing::ExpectMatch(text, 1e-12);  // bit for bit
}

// shard_map's all_gather, psum_scatter, ppermute, pmax and pmean over 8 MiB gathers: the ring
// collectives run in rounds of at most 4 MiB of VMEM staging each.
TEST(ExactSpmd, ShardMapCollectivesInRounds) {
  testing::ExpectMatch(Read("examples/jax/collectives_shardmap8.pre.hlo"), 1e-6);
}

// jit over a batch-sharded input: each core computes its rows, the weight gradient is a
// partial sum all-reduced, a replicated operand is sliced per core by partition-id.
TEST(ExactSpmd, DataParallelTiles) {
  testing::ExpectMatch(R"(HloModule dp
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,256] parameter(0), sharding={devices=[8,1]<=[8]}
  w = f32[256,128] parameter(1), sharding={replicated}
  b = f32[64,128] parameter(2), sharding={replicated}
  h = f32[64,128] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[64,128] add(h, b)
  gw = f32[256,128] dot(x, t), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT r = (f32[256,128], f32[64,128]) tuple(gw, t)
}
)",
                       1e-5);
}

// Megatron's tensor-parallel MLP training step under shard_map, as JAX printed it.
TEST(ExactSpmd, TensorParallelMlpStep) {
  testing::ExpectMatch(Read("examples/jax/tp_mlp_shardmap8.pre.hlo"), 1e-4);
}

}  // namespace
}  // namespace tpusim
