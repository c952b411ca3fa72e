// The model zoo and the module each model becomes: the forward pass (inference) or a whole
// data-parallel training step (forward, loss, gradients, one all-reduce, optimizer update).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/model/emit.h"
#include "compiler/model/layers.h"
#include "compiler/model/optimizer.h"

namespace tpusim::model {

// What a model's forward function returns: logits [N, C] and, when training, the s32[N]
// labels; the loss is the summed cross-entropy over `loss_terms_per_example` x global batch
// terms (1 for classifiers, the masked positions for BERT), divided by that count.
struct ForwardResult {
  Op logits;
  Op labels;
  int64_t loss_terms_per_example = 1;
};

struct ModelSpec {
  std::string name;
  std::string description;
  int64_t default_batch;  // global batch
  Optimizer default_optimizer;
  std::function<ForwardResult(ModelContext&)> forward;
};

// mnist-cnn, mlp, resnet50, bert-base, transformer-layer (models_*.cc).
const std::vector<ModelSpec>& Models();
const ModelSpec* FindModel(const std::string& name);
std::string ModelNames();  // "mnist-cnn, mlp, ..."

struct ModelOptions {
  int64_t global_batch = 0;  // 0: the model's default
  int64_t replicas = 8;      // replica_count; the global batch must divide evenly
  PrimitiveType dtype = PrimitiveType::kF32;
  std::optional<Optimizer> optimizer{};  // empty: the model's default
  bool train = false;
  bool tiny = false;  // the small variant (tests)
};

// Sizes of a built module, from its graph.
struct ModuleStats {
  int64_t parameters = 0;        // weight elements
  int64_t instructions = 0;      // in the entry computation
  double flops_per_replica = 0;  // 2 x MACs of every dot and convolution (others not counted)
};

struct BuiltModel {
  std::string hlo{};
  ModuleStats stats{};
  int64_t per_replica_batch = 0;
  Optimizer optimizer = Optimizer::kSgd;
};

// Builds `spec` as HLO text. The module is named after the model; the training step's
// parameters are (inputs..., labels, weights..., optimizer state...) and its root the tuple
// (loss, new weights..., new optimizer state...). Throws std::invalid_argument on a batch
// that does not divide over the replicas.
BuiltModel BuildModel(const ModelSpec& spec, const ModelOptions& options);

// The pieces BuildModel assembles, for tests: the builder holds the forward graph and `loss`
// (the per-replica share of the global mean loss, no all-reduce); `weights` are parameters.
struct LossGraph {
  Op loss;
  std::vector<Op> weights;
};
LossGraph BuildLoss(Builder& b, const ModelSpec& spec, const ModelOptions& options);

// Counts of the graph `root` depends on.
ModuleStats ComputeStats(const Builder& b, Op root, const std::vector<Op>& weights);

}  // namespace tpusim::model
