// mnist-cnn, the CNN of the TF "Use TPUs" guide: Conv2D 256 3x3 relu, Conv2D 256 3x3 relu
// (Keras default VALID padding), Flatten, Dense 256 relu, Dense 128 relu, Dense 10.
// tiny: 8x8x1 input, 4 filters, Dense 8/6/10.
#include "compiler/model/model_zoo.h"

namespace tpusim::model {

ForwardResult MnistCnnForward(ModelContext& ctx) {
  const bool tiny = ctx.tiny();
  const int64_t side = tiny ? 8 : 28;  // MNIST is 28x28 grey
  const int64_t filters = tiny ? 4 : 256;
  Op x = ctx.Input("images", ctx.dtype(), {ctx.batch(), side, side, 1});
  Op labels = ctx.Labels({ctx.batch()});
  x = Relu(Conv(ctx, x, filters, 3, 1, "conv1", /*bias=*/true, /*same_padding=*/false));
  x = Relu(Conv(ctx, x, filters, 3, 1, "conv2", /*bias=*/true, /*same_padding=*/false));
  x = Reshape(x, {ctx.batch(), x.dim(1) * x.dim(2) * x.dim(3)});
  x = Relu(Dense(ctx, x, tiny ? 8 : 256, "dense1"));
  x = Relu(Dense(ctx, x, tiny ? 6 : 128, "dense2"));
  return {Dense(ctx, x, 10, "logits"), labels};
}

}  // namespace tpusim::model
