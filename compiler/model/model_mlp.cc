// mlp: 784-1024-1024-10 with ReLU (tiny: 12-8-8-4).
#include "compiler/model/model_zoo.h"

namespace tpusim::model {

ForwardResult MlpForward(ModelContext& ctx) {
  const int64_t inputs = ctx.tiny() ? 12 : 784;  // 28x28 pixels, flattened
  const int64_t hidden = ctx.tiny() ? 8 : 1024;
  const int64_t classes = ctx.tiny() ? 4 : 10;
  Op x = ctx.Input("images", ctx.dtype(), {ctx.batch(), inputs});
  Op labels = ctx.Labels({ctx.batch()});
  x = Relu(Dense(ctx, x, hidden, "dense1"));
  x = Relu(Dense(ctx, x, hidden, "dense2"));
  return {Dense(ctx, x, classes, "logits"), labels};
}

}  // namespace tpusim::model
