// resnet50: ResNet-50 v1.5 (stride on the 3x3 convolution of each bottleneck), batch norm
// after every convolution, SAME padding, 224x224x3 input, 1000 classes.
// tiny: 16x16x3 input, widths 2/4/8/16, one block per stage, 10 classes.
#include <string>

#include "compiler/model/model_zoo.h"

namespace tpusim::model {
namespace {

Op ConvBn(ModelContext& ctx, Op x, int64_t filters, int64_t size, int64_t stride,
          const std::string& name) {
  return BatchNorm(ctx, Conv(ctx, x, filters, size, stride, name, /*bias=*/false, true),
                   name + "_bn");
}

// 1x1 reduce, 3x3 (strided), 1x1 expand by 4; projection shortcut when the shape changes.
Op Bottleneck(ModelContext& ctx, Op x, int64_t width, int64_t stride, const std::string& name) {
  constexpr int64_t kExpansion = 4;
  Op shortcut = x;
  if (stride != 1 || x.dim(3) != width * kExpansion) {
    shortcut = ConvBn(ctx, x, width * kExpansion, 1, stride, name + "_proj");
  }
  Op y = Relu(ConvBn(ctx, x, width, 1, 1, name + "_1"));
  y = Relu(ConvBn(ctx, y, width, 3, stride, name + "_2"));
  y = ConvBn(ctx, y, width * kExpansion, 1, 1, name + "_3");
  return Relu(y + shortcut);
}

}  // namespace

ForwardResult ResNet50Forward(ModelContext& ctx) {
  const bool tiny = ctx.tiny();
  const int64_t side = tiny ? 16 : 224;
  const int64_t base = tiny ? 2 : 64;  // width of the first stage
  const int64_t classes = tiny ? 10 : 1000;
  const int64_t blocks[4] = {tiny ? 1 : 3, tiny ? 1 : 4, tiny ? 1 : 6, tiny ? 1 : 3};
  Op x = ctx.Input("images", ctx.dtype(), {ctx.batch(), side, side, 3});
  Op labels = ctx.Labels({ctx.batch()});
  x = Relu(ConvBn(ctx, x, base, 7, 2, "conv1"));
  x = MaxPool(x, Window2D::Same(x.dim(1), x.dim(2), 3, 2));
  for (int stage = 0; stage < 4; ++stage) {
    for (int64_t block = 0; block < blocks[stage]; ++block) {
      const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      x = Bottleneck(ctx, x, base << stage, stride,
                     "stage" + std::to_string(stage + 2) + "_block" + std::to_string(block + 1));
    }
  }
  const double pixels = double(x.dim(1) * x.dim(2));
  x = ReduceSum(x, {1, 2}) * (1.0 / pixels);  // global average pool
  return {Dense(ctx, x, classes, "fc"), labels};
}

}  // namespace tpusim::model
