// Assembles a model's module: forward pass, or loss + gradients + all-reduce + optimizer.
#include <stdexcept>

#include "compiler/model/autodiff.h"
#include "compiler/model/models.h"

namespace tpusim::model {
namespace {

int64_t PerReplicaBatch(const ModelSpec& spec, const ModelOptions& options) {
  const int64_t global = options.global_batch > 0 ? options.global_batch : spec.default_batch;
  Check(options.replicas >= 1, "replicas must be at least 1");
  if (global % options.replicas != 0) {
    throw std::invalid_argument("global batch " + std::to_string(global) +
                                " does not divide over " + std::to_string(options.replicas) +
                                " replicas");
  }
  return global / options.replicas;
}

ModelContext MakeContext(Builder& b, const ModelSpec& spec, const ModelOptions& options) {
  return ModelContext(b, {.dtype = options.dtype,
                          .batch = PerReplicaBatch(spec, options),
                          .train = options.train,
                          .tiny = options.tiny});
}

Op LossOf(const ModelContext& ctx, const ForwardResult& f, int64_t replicas) {
  const double terms = double(ctx.batch() * replicas * f.loss_terms_per_example);
  return SoftmaxCrossEntropySum(f.logits, f.labels, ctx.master_type()) * (1.0 / terms);
}

}  // namespace

LossGraph BuildLoss(Builder& b, const ModelSpec& spec, const ModelOptions& options) {
  ModelOptions train = options;
  train.train = true;
  ModelContext ctx = MakeContext(b, spec, train);
  ForwardResult f = spec.forward(ctx);
  return {LossOf(ctx, f, options.replicas), ctx.weights()};
}

BuiltModel BuildModel(const ModelSpec& spec, const ModelOptions& options) {
  Builder b(spec.name + (options.train ? "_train_step" : "_forward"));
  ModelContext ctx = MakeContext(b, spec, options);
  ForwardResult f = spec.forward(ctx);
  BuiltModel built{.per_replica_batch = ctx.batch(),
                   .optimizer = options.optimizer.value_or(spec.default_optimizer)};
  ModuleOptions module;
  module.replica_count = options.replicas;
  if (!options.train) {
    built.stats = ComputeStats(b, f.logits, ctx.weights());
    built.hlo = EmitModule(b, f.logits, module);
    return built;
  }
  Op loss = LossOf(ctx, f, options.replicas);
  const std::vector<Op>& weights = ctx.weights();
  std::vector<Op> grads = Gradients(loss, weights);
  // One all-reduce per gradient, and one of the loss, as a framework's data-parallel step
  // writes them (XLA's all-reduce-combiner buckets them): the sum over replicas of each
  // replica's share of the global mean is the global mean loss and its gradient.
  if (options.replicas > 1) {
    std::vector<int64_t> group;
    for (int64_t r = 0; r < options.replicas; ++r) group.push_back(r);
    for (Op& g : grads) g = AllReduceSum(b, {g}, {group});
    loss = AllReduceSum(b, {loss}, {group});
  }
  std::vector<std::string> names;
  for (Op w : weights) names.push_back(b.node(w).name);
  OptimizerStep step = ApplyOptimizer(b, built.optimizer, weights, grads, names);
  std::vector<Op> outputs = {loss};
  outputs.insert(outputs.end(), step.new_weights.begin(), step.new_weights.end());
  outputs.insert(outputs.end(), step.new_state.begin(), step.new_state.end());
  Op root = Tuple(b, outputs);
  built.stats = ComputeStats(b, root, weights);
  // New weights and optimizer state take over the old ones' buffers, step after step.
  ModuleOptions donating = module;
  std::vector<Op> donors = weights;
  donors.insert(donors.end(), step.state.begin(), step.state.end());
  for (size_t k = 0; k < donors.size(); ++k)
    donating.donations.push_back({static_cast<int64_t>(k) + 1, b.node(donors[k]).index});
  built.hlo = EmitModule(b, root, donating);
  return built;
}

ModuleStats ComputeStats(const Builder& b, Op root, const std::vector<Op>& weights) {
  ModuleStats stats;
  for (Op w : weights) stats.parameters += w.shape().ElementCount();
  std::vector<bool> live(static_cast<size_t>(root.id) + 1, false);
  live.back() = true;
  for (int id = root.id; id >= 0; --id) {
    if (!live[static_cast<size_t>(id)]) continue;
    const Node& n = b.node(id);
    ++stats.instructions;
    for (int operand : n.operands) live[static_cast<size_t>(operand)] = true;
    if (n.opcode == Opcode::kDot) {  // 2 x output elements x contracted size
      double contracted = 1;
      for (int64_t d : n.dot.lhs_contracting)
        contracted *= double(b.node(n.operands[0]).shape.dims[d]);
      stats.flops_per_replica += 2 * double(n.shape.ElementCount()) * contracted;
    } else if (n.opcode == Opcode::kConvolution) {  // 2 x output elements x window x in-features
      const Shape& kernel = b.node(n.operands[1]).shape;
      const Shape& out = n.shape;
      // Every dim_labels the builder emits puts the output feature last, and the kernel holds
      // (contracted size x output features) elements.
      const int64_t out_features = out.dims[3];
      stats.flops_per_replica +=
          2 * double(out.ElementCount()) * double(kernel.ElementCount()) / double(out_features);
    }
  }
  for (int p : b.parameters()) {  // emitted even when unused
    if (p > root.id || !live[static_cast<size_t>(p)]) ++stats.instructions;
  }
  return stats;
}

}  // namespace tpusim::model
