// Host evaluator: collectives across replicas (EvaluateReplicated).
#include <gtest/gtest.h>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"

namespace tpusim::eval {
namespace {

using V = std::vector<double>;
using hlo::PrimitiveType;

const char kAdd[] = R"(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";

// Runs `entry` on one f32[4] argument per replica: replica r gets {r, r+1, r+2, r+3} * 10^r.
std::vector<std::vector<Value>> RunReplicas(const std::string& entry, int replicas) {
  Result<hlo::HloModule> m =
      hlo::ParseHlo("HloModule t, replica_count=" + std::to_string(replicas) + "\n" + kAdd +
                    "ENTRY %e {\n%x = f32[4] parameter(0)\n" + entry + "\n}\n");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  std::vector<std::vector<Value>> args;
  for (int r = 0; r < replicas; ++r) {
    args.push_back(
        {Value::FromVector(PrimitiveType::kF32, {4}, {1.0 * r, r + 1.0, r + 2.0, r + 3.0})});
  }
  Result<std::vector<std::vector<Value>>> out = EvaluateReplicated(*m, args);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : std::vector<std::vector<Value>>{};
}

TEST(EvalCollectives, AllReduceWithGroups) {
  auto r = RunReplicas("ROOT %a = f32[4] all-reduce(%x), replica_groups={}, to_apply=%add", 4);
  ASSERT_EQ(r.size(), 4u);
  for (const auto& rep : r) EXPECT_EQ(rep[0].data, (V{6, 10, 14, 18}));
  r = RunReplicas("ROOT %a = f32[4] all-reduce(%x), replica_groups={{0,2},{1,3}}, to_apply=%add",
                  4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0][0].data, (V{2, 4, 6, 8}));
  EXPECT_EQ(r[3][0].data, (V{4, 6, 8, 10}));
}

TEST(EvalCollectives, AllGatherReduceScatterPermute) {
  auto r = RunReplicas(
      "%g = f32[8] all-gather(%x), replica_groups={{1,0}}, dimensions={0}\n"
      "%s = f32[2] reduce-scatter(%x), replica_groups={{0,1}}, dimensions={0}, "
      "to_apply=%add\n"
      "%p = f32[4] collective-permute(%x), source_target_pairs={{0,1}}\n"
      "ROOT %t = (f32[8], f32[2], f32[4]) tuple(%g, %s, %p)",
      2);
  ASSERT_EQ(r.size(), 2u);
  for (const auto& rep : r) EXPECT_EQ(rep[0].data, (V{1, 2, 3, 4, 0, 1, 2, 3}));  // group order
  EXPECT_EQ(r[0][1].data, (V{1, 3}));
  EXPECT_EQ(r[1][1].data, (V{5, 7}));
  EXPECT_EQ(r[0][2].data, (V{0, 0, 0, 0}));  // nobody sends to replica 0
  EXPECT_EQ(r[1][2].data, (V{0, 1, 2, 3}));
}

TEST(EvalCollectives, ErrorsAreClear) {
  Result<std::vector<Value>> single =
      EvaluateText(std::string("HloModule t\n") + kAdd +
                       "ENTRY %e {\n%x = f32[4] parameter(0)\nROOT %a = f32[4] all-reduce(%x), "
                       "replica_groups={{0,1}}, to_apply=%add\n}\n",
                   {Value::Zeros(hlo::Shape::Array(PrimitiveType::kF32, {4}))});
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.status().message(),
            "%a: replica group names replica 1 but 1 replicas run (use EvaluateReplicated)");
  // One replica failing does not hang the others waiting at a collective.
  Result<hlo::HloModule> m = hlo::ParseHlo(std::string("HloModule t\n") + kAdd +
                                           "ENTRY %e {\n%x = f32[4] parameter(0)\n"
                                           "ROOT %a = f32[4] all-reduce(%x), to_apply=%add\n}\n");
  ASSERT_TRUE(m.ok());
  Value good = Value::Zeros(hlo::Shape::Array(PrimitiveType::kF32, {4}));
  Value bad = Value::Zeros(hlo::Shape::Array(PrimitiveType::kF32, {3}));
  Result<std::vector<std::vector<Value>>> r = EvaluateReplicated(*m, {{good}, {bad}, {good}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "replica 1: %x: expects f32[4] but argument 0 is f32[3]");
}

TEST(EvalCollectives, ReplicasThatSkipACollectiveDoNotHang) {
  // Only replica 0 (x[0] == 0) takes the branch with the all-reduce.
  std::string comps = std::string(kAdd) + R"(
%reduce (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %a = f32[4] all-reduce(%x), to_apply=%add
}
%keep (x: f32[4]) -> f32[4] {
  ROOT %x = f32[4] parameter(0)
}
)";
  Result<hlo::HloModule> m =
      hlo::ParseHlo("HloModule t, replica_count=2\n" + comps +
                    "ENTRY %e {\n%x = f32[4] parameter(0)\n%x0 = f32[1] slice(%x), slice={[0:1]}\n"
                    "%s = f32[] reshape(%x0)\n%z = f32[] constant(0)\n"
                    "%p = pred[] compare(%s, %z), direction=EQ\n"
                    "ROOT %c = f32[4] conditional(%p, %x, %x), true_computation=%reduce, "
                    "false_computation=%keep\n}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<std::vector<Value>> args;
  for (int r = 0; r < 2; ++r) {
    args.push_back({Value::FromVector(PrimitiveType::kF32, {4}, {1.0 * r, 0, 0, 0})});
  }
  Result<std::vector<std::vector<Value>>> r = EvaluateReplicated(*m, args);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "replica 0: %a: some replicas finished without reaching %a");
}

// Replicas given the same arguments: one mirrored interpreter equals every replica of the
// replicated run, bit for bit (folding x six times in f32 rounds differently than 6 * x).
TEST(EvalCollectives, MirroredReplicasEqualEveryReplicatedOne) {
  Result<hlo::HloModule> m =
      hlo::ParseHlo(std::string("HloModule t, replica_count=6\n") + kAdd +
                    "ENTRY %e {\n%x = f32[4] parameter(0)\n"
                    "%a = f32[4] all-reduce(%x), replica_groups={{2,0,1,5,4,3}}, to_apply=%add\n"
                    "%g = f32[24] all-gather(%a), replica_groups={}, dimensions={0}\n"
                    "%p = f32[24] collective-permute(%g), "
                    "source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,0}}\n"
                    "ROOT %t = (f32[4], f32[24]) tuple(%a, %p)\n}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::vector<Value> args = {
      Value::FromVector(PrimitiveType::kF32, {4}, {1.9991562366485596, -2.5, 1e-8, 3.0})};
  Result<std::vector<Value>> mirrored = EvaluateMirrored(*m, args, 6);
  ASSERT_TRUE(mirrored.ok()) << mirrored.status().message();
  Result<std::vector<std::vector<Value>>> replicated =
      EvaluateReplicated(*m, std::vector<std::vector<Value>>(6, args));
  ASSERT_TRUE(replicated.ok()) << replicated.status().message();
  EXPECT_NE(mirrored->at(0).data[0], RoundTo(PrimitiveType::kF32, 6 * args[0].data[0]));
  for (const std::vector<Value>& replica : *replicated) {
    ASSERT_EQ(replica.size(), mirrored->size());
    for (size_t i = 0; i < replica.size(); ++i) EXPECT_EQ(replica[i].data, mirrored->at(i).data);
  }
}

TEST(EvalCollectives, MirroringNamesTheOpThatTellsReplicasApart) {
  auto obstacle = [](const std::string& body) {
    Result<hlo::HloModule> m =
        hlo::ParseHlo(std::string("HloModule t, replica_count=2\n") + kAdd +
                      "ENTRY %e {\n%x = f32[4] parameter(0)\n" + body + "\n}\n");
    EXPECT_TRUE(m.ok()) << m.status().message();
    if (!m.ok()) return std::string();
    Result<std::vector<Value>> r =
        EvaluateMirrored(*m, {Value::Zeros(hlo::Shape::Array(PrimitiveType::kF32, {4}))}, 2);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(MirrorObstacle(*m, 2).has_value(), !r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(obstacle("ROOT %s = f32[2] reduce-scatter(%x), dimensions={0}, to_apply=%add"),
            "replicas cannot be mirrored: %s (reduce-scatter) gives each replica a different part");
  EXPECT_EQ(obstacle("ROOT %p = f32[4] collective-permute(%x), source_target_pairs={{0,1}}"),
            "replicas cannot be mirrored: %p (collective-permute) sends to only some replicas "
            "(the others receive zeros)");
  EXPECT_EQ(obstacle("ROOT %a = f32[4] all-reduce(%x), replica_groups={{0}}, to_apply=%add"),
            "replicas cannot be mirrored: %a (all-reduce) leaves some replica out of its groups");
}

}  // namespace
}  // namespace tpusim::eval
