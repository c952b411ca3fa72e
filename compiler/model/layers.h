// Neural-network layers on the model builder and the context a model is built in: which
// dtype it computes in, its per-replica batch, and the weights it declared.
#pragma once

#include <string>
#include <vector>

#include "compiler/model/builder_ops.h"

namespace tpusim::model {

struct ModelConfig {
  PrimitiveType dtype = PrimitiveType::kF32;  // activations: f32, bf16, or f64 (tests)
  int64_t batch = 1;                          // examples per replica
  bool train = false;                         // declare labels (the loss needs them)
  bool tiny = false;                          // the model's small variant, for tests
};

class ModelContext {
 public:
  ModelContext(Builder& builder, ModelConfig config) : b_(builder), config_(config) {}

  Builder& builder() { return b_; }
  const ModelConfig& config() const { return config_; }
  int64_t batch() const { return config_.batch; }
  bool tiny() const { return config_.tiny; }
  PrimitiveType dtype() const { return config_.dtype; }
  // Weights, gradients and optimizer state: f32 (master weights for bf16), f64 in f64 mode.
  PrimitiveType master_type() const;
  // Accumulation type of dots and convolutions: f32 for bf16 operands, else the dtype.
  PrimitiveType accumulate_type() const;

  // A per-replica input parameter.
  Op Input(const std::string& name, PrimitiveType type, std::vector<int64_t> dims);
  // s32 labels when training; an empty Op otherwise.
  Op Labels(std::vector<int64_t> dims);
  // A weight parameter in the master type; returns it converted to the dtype.
  Op Weight(const std::string& name, std::vector<int64_t> dims);
  // Weight parameters (master type) in declaration order.
  const std::vector<Op>& weights() const { return weights_; }

 private:
  Builder& b_;
  ModelConfig config_;
  std::vector<Op> weights_;
};

// x[.., in] -> [.., out]: x W (+ b), accumulated in accumulate_type, result in the dtype.
Op Dense(ModelContext& ctx, Op x, int64_t out, const std::string& name, bool bias = true);
// NHWC conv with HWIO kernel `size`x`size`, SAME or VALID padding, optional bias.
Op Conv(ModelContext& ctx, Op x, int64_t filters, int64_t size, int64_t stride,
        const std::string& name, bool bias, bool same_padding);
Op Relu(Op x);
// tanh approximation of GELU (BERT): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Op Gelu(Op x);
// Batch norm over NHWC (training statistics) with learned scale and offset; in the master
// type, the result in the dtype.
Op BatchNorm(ModelContext& ctx, Op x, const std::string& name);
// Layer norm over the last dimension with learned gain and bias, in the master type.
Op LayerNorm(ModelContext& ctx, Op x, const std::string& name);
// Softmax over the last dimension (max-shifted; the shift passes no gradient).
Op Softmax(Op x);
// Sum over rows of -log softmax(logits)[label]; logits [N, C] (converted to `type`),
// labels s32[N]. A scalar of `type`.
Op SoftmaxCrossEntropySum(Op logits, Op labels, PrimitiveType type);

}  // namespace tpusim::model
