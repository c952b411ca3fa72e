// The model registry.
#include "compiler/model/model_zoo.h"

namespace tpusim::model {

const std::vector<ModelSpec>& Models() {
  static const std::vector<ModelSpec> kModels = {
      {"mnist-cnn", "TF TPU guide CNN: 2x Conv2D 256 3x3, Dense 256/128/10 on 28x28x1", 200,
       Optimizer::kAdam, MnistCnnForward},
      {"mlp", "784-1024-1024-10 ReLU perceptron", 1024, Optimizer::kSgd, MlpForward},
      {"resnet50", "ResNet-50 v1.5 with batch norm, 224x224x3, 1000 classes", 1024,
       Optimizer::kMomentum, ResNet50Forward},
      {"bert-base", "BERT-base masked LM: 12 layers, hidden 768, 12 heads, sequence 128", 256,
       Optimizer::kAdam, BertBaseForward},
      {"transformer-layer", "one BERT-base encoder layer with a per-token classifier", 64,
       Optimizer::kAdam, TransformerLayerForward},
  };
  return kModels;
}

const ModelSpec* FindModel(const std::string& name) {
  for (const ModelSpec& m : Models()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string ModelNames() {
  std::string out;
  for (const ModelSpec& m : Models()) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

}  // namespace tpusim::model
