// The forward functions of the models (one file each), registered in models.cc.
#pragma once

#include "compiler/model/models.h"

namespace tpusim::model {

ForwardResult MlpForward(ModelContext& ctx);
ForwardResult MnistCnnForward(ModelContext& ctx);
ForwardResult ResNet50Forward(ModelContext& ctx);
ForwardResult BertBaseForward(ModelContext& ctx);
ForwardResult TransformerLayerForward(ModelContext& ctx);

}  // namespace tpusim::model
