// The models of compiler/model: every module parses and verifies at default size, each
// model's gradients match finite differences at its tiny size, training lowers the loss,
// and the shipped examples/models/*.hlo are what the builder writes today.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/model/gradcheck.h"
#include "compiler/model/models.h"

namespace tpusim::model {
namespace {

using hlo::PrimitiveType;

hlo::HloModule ParseAndVerify(const std::string& text) {
  auto module = hlo::ParseHlo(text, "model");
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return hlo::HloModule();
  hlo::Status st = hlo::VerifyModule(*module);
  EXPECT_TRUE(st.ok()) << st.message();
  return std::move(module).value();
}

// Integer inputs in range: indices within their tables, labels within the classes.
void FixIntegerArguments(const Builder& b, std::vector<eval::Value>& args) {
  const std::map<std::string, int64_t> kBounds = {{"labels", 2},
                                                  {"tokens", 12},
                                                  {"segment_ids", 2},  // tiny sizes (model_*.cc)
                                                  {"masked_positions", 4}};
  for (size_t i = 0; i < args.size(); ++i) {
    const Node& p = b.node(b.parameters()[i]);
    auto it = kBounds.find(p.name);
    if (it == kBounds.end()) continue;
    for (size_t e = 0; e < args[i].data.size(); ++e)
      args[i].data[e] = double((e * 7 + i) % it->second);
  }
}

class EveryModel : public testing::TestWithParam<std::string> {};

TEST_P(EveryModel, DefaultSizeModulesParseAndVerify) {
  const ModelSpec* spec = FindModel(GetParam());
  ASSERT_NE(spec, nullptr);
  for (bool train : {false, true}) {
    for (PrimitiveType dtype : {PrimitiveType::kF32, PrimitiveType::kBF16}) {
      BuiltModel built = BuildModel(*spec, {.dtype = dtype, .train = train});
      hlo::HloModule m = ParseAndVerify(built.hlo);
      EXPECT_EQ(m.replica_count, 8);
      EXPECT_EQ(m.entry()->root()->shape().IsTuple(), train);
    }
  }
}

TEST_P(EveryModel, TinyGradientsMatchFiniteDifferences) {
  const ModelSpec* spec = FindModel(GetParam());
  ASSERT_NE(spec, nullptr);
  Builder b("gradcheck");
  LossGraph graph = BuildLoss(
      b, *spec, {.global_batch = 2, .replicas = 1, .dtype = PrimitiveType::kF64, .tiny = true});
  std::vector<eval::Value> args = RandomArguments(b, 11);
  FixIntegerArguments(b, args);
  // A small step: batch norm over two examples makes the deep models strongly curved, and
  // the central difference's h^2 error at h = 1e-5 reaches 2e-5 relative in ResNet's gammas.
  hlo::Status st = CheckGradients(b, graph.loss, graph.weights, args,
                                  {.entries_per_parameter = 1, .step = 1e-6});
  EXPECT_TRUE(st.ok()) << st.message();
}

// The shipped module at `path` is `want` (TPUSIM_UPDATE_GOLDEN=1 rewrites it).
void ExpectGoldenCurrent(const std::string& path, const std::string& want) {
  const char* update = std::getenv("TPUSIM_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") std::ofstream(path, std::ios::binary) << want;
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << path << " (run from the repository root)";
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_TRUE(got.str() == want) << path << " is stale; regenerate with "
                                 << "TPUSIM_UPDATE_GOLDEN=1 ctest -R model_zoo_test";
}

TEST_P(EveryModel, GoldenExampleIsCurrent) {
  const std::string path = "examples/models/" + GetParam() + ".hlo";
  const std::string want = BuildModel(*FindModel(GetParam()), {.train = true}).hlo;
  ExpectGoldenCurrent(path, want);
}

// The benchmarked ResNet-50 of docs/fidelity.md: bf16, SGD, global batch 1024.
TEST(ModelZoo, Resnet50Bf16ExampleIsCurrent) {
  const std::string path = "examples/models/resnet50-bf16.hlo";
  const std::string want = BuildModel(*FindModel("resnet50"), {.global_batch = 1024,
                                                               .dtype = PrimitiveType::kBF16,
                                                               .optimizer = Optimizer::kSgd,
                                                               .train = true})
                               .hlo;
  ExpectGoldenCurrent(path, want);
}

INSTANTIATE_TEST_SUITE_P(Models, EveryModel,
                         testing::Values("mnist-cnn", "mlp", "resnet50", "bert-base",
                                         "transformer-layer"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// Five training steps on two replicas through the evaluator, new weights and optimizer state
// fed back each step: the loss (the same batch each time) goes down.
void ExpectLossDecreases(const std::string& model, Optimizer optimizer,
                         PrimitiveType dtype = PrimitiveType::kF32) {
  constexpr int kReplicas = 2, kSteps = 5;
  BuiltModel built = BuildModel(*FindModel(model), {.global_batch = 8,
                                                    .replicas = kReplicas,
                                                    .dtype = dtype,
                                                    .optimizer = optimizer,
                                                    .train = true,
                                                    .tiny = true});
  hlo::HloModule m = ParseAndVerify(built.hlo);
  ASSERT_NE(m.entry(), nullptr);
  const auto params = m.entry()->parameters();
  // The inputs come first (per replica data), then the weights and optimizer state.
  const std::map<std::string, int64_t> kIntegerBounds = {
      {"labels", 2}, {"tokens", 12}, {"segment_ids", 2}, {"masked_positions", 4}};
  size_t inputs = 0;
  std::vector<std::vector<eval::Value>> args(kReplicas);
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& full = params[i]->name();
    const std::string name = full.substr(0, full.rfind('.'));  // without the ".ID" suffix
    const bool input = name == "images" || name == "activations" || kIntegerBounds.count(name);
    if (input) inputs = i + 1;
    for (int r = 0; r < kReplicas; ++r) {
      eval::Value v = eval::Value::Random(params[i]->shape(), input ? 100 * r + i : i);
      if (auto bound = kIntegerBounds.find(name); bound != kIntegerBounds.end()) {
        for (size_t e = 0; e < v.data.size(); ++e) v.data[e] = double((e + r) % bound->second);
      } else if (name.find("_adam_") != std::string::npos || name == "adam_step") {
        v = eval::Value::Zeros(params[i]->shape());
      } else if (!input) {
        for (double& x : v.data) x *= 0.5;  // modest initial weights
      }
      args[r].push_back(v);
    }
  }
  std::vector<double> losses;
  for (int step = 0; step <= kSteps; ++step) {
    auto out = eval::EvaluateReplicated(m, args);
    ASSERT_TRUE(out.ok()) << out.status().message();
    losses.push_back((*out)[0][0].scalar());
    EXPECT_EQ((*out)[0][0].scalar(), (*out)[1][0].scalar()) << "replicas disagree on the loss";
    for (int r = 0; r < kReplicas; ++r) {
      for (size_t k = 1; k < (*out)[r].size(); ++k) args[r][inputs + k - 1] = (*out)[r][k];
    }
  }
  for (int step = 1; step <= kSteps; ++step) {
    EXPECT_LT(losses[step], losses[step - 1]) << model << " step " << step;
  }
}

TEST(ModelTraining, MlpSgdLowersLoss) { ExpectLossDecreases("mlp", Optimizer::kSgd); }
TEST(ModelTraining, MlpAdamLowersLoss) { ExpectLossDecreases("mlp", Optimizer::kAdam); }
TEST(ModelTraining, MnistCnnAdamLowersLoss) { ExpectLossDecreases("mnist-cnn", Optimizer::kAdam); }
TEST(ModelTraining, MnistCnnMomentumLowersLoss) {
  ExpectLossDecreases("mnist-cnn", Optimizer::kMomentum);
}

TEST(ModelTraining, MnistCnnBf16SgdLowersLoss) {
  ExpectLossDecreases("mnist-cnn", Optimizer::kSgd, PrimitiveType::kBF16);
}

TEST(ModelTraining, BertTinyAdamLowersLoss) { ExpectLossDecreases("bert-base", Optimizer::kAdam); }
TEST(ModelTraining, ResNetTinyMomentumLowersLoss) {
  ExpectLossDecreases("resnet50", Optimizer::kMomentum);
}

TEST(ModelBuild, BatchMustDivideOverReplicas) {
  EXPECT_THROW(BuildModel(*FindModel("mnist-cnn"), {.global_batch = 100, .train = true}),
               std::invalid_argument);
  EXPECT_EQ(FindModel("nope"), nullptr);
}

}  // namespace
}  // namespace tpusim::model
