// HLO modules of batch norm as bf16 training steps hand it, shared by the value tests of
// its kernels (exact_bn_fusion_test.cc, exact_long_chunks_test.cc) and of batch-norm-fusion
// (pass_bn_fusion_test.cc).
#pragma once

#include <string>
#include <utility>

namespace tpusim::testing {

// `text` with every "$S" replaced by `shape` (an activation's dimensions) and "$F" by
// `features` (its last one).
inline std::string WithShape(std::string text, const std::string& shape,
                             const std::string& features) {
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"$S", shape},
                                   std::pair<std::string, std::string>{"$F", features}})
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at))
      text.replace(at, key.size(), value), at += value.size();
  return text;
}

// y's ReLU added to the gradient its statistics feed (difftest seed 221290, varied): the
// normalizing pass cannot take the add, which waits for the gradient (a cycle through it).
inline constexpr const char* kReluOfYAddedToItsGradient = R"(HloModule m
ENTRY %main (x: f32[2,4,2,2048], g: f32[2048], b: f32[2048], dz: f32[2,4,2,2048]) -> f32[2,4,2,2048] {
  %x = f32[2,4,2,2048] parameter(0)
  %g = f32[2048] parameter(1)
  %b = f32[2048] parameter(2)
  %dz = f32[2,4,2,2048] parameter(3)
  %bn = (f32[2,4,2,2048], f32[2048], f32[2048]) batch-norm-training(%x, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[2,4,2,2048] get-tuple-element(%bn), index=0
  %m = f32[2048] get-tuple-element(%bn), index=1
  %v = f32[2048] get-tuple-element(%bn), index=2
  %zero = f32[] constant(0)
  %zeros = f32[2,4,2,2048] broadcast(%zero), dimensions={}
  %r = f32[2,4,2,2048] maximum(%y, %zeros)
  %grad = (f32[2,4,2,2048], f32[2048], f32[2048]) batch-norm-grad(%x, %g, %m, %v, %dz), epsilon=0.001, feature_index=3
  %dx = f32[2,4,2,2048] get-tuple-element(%grad), index=0
  ROOT %s = f32[2,4,2,2048] add(%dx, %r)
})";

// relu(batch-norm-training(x)) in bf16 with f32 statistics, as ResNet's layers compute it;
// `shape` is x's dimensions, features last ("8,8,8,64" and "64").
inline std::string Bf16BatchNormRelu(const std::string& shape, const std::string& features) {
  return WithShape(R"(HloModule m, replica_count=8
ENTRY %main (x: bf16[$S], g: f32[$F], b: f32[$F]) -> (bf16[$S], f32[$F], f32[$F]) {
  %x = bf16[$S]{3,2,1,0} parameter(0)
  %g = f32[$F]{0} parameter(1)
  %b = f32[$F]{0} parameter(2)
  %xw = f32[$S]{3,2,1,0} convert(%x)
  %bn = (f32[$S]{3,2,1,0}, f32[$F]{0}, f32[$F]{0}) batch-norm-training(%xw, %g, %b), epsilon=0.001, feature_index=3
  %y = f32[$S]{3,2,1,0} get-tuple-element(%bn), index=0
  %mean = f32[$F]{0} get-tuple-element(%bn), index=1
  %var = f32[$F]{0} get-tuple-element(%bn), index=2
  %y16 = bf16[$S]{3,2,1,0} convert(%y)
  %zero = bf16[] constant(0)
  %zeros = bf16[$S]{3,2,1,0} broadcast(%zero), dimensions={}
  %relu = bf16[$S]{3,2,1,0} maximum(%y16, %zeros)
  ROOT %t = (bf16[$S]{3,2,1,0}, f32[$F]{0}, f32[$F]{0}) tuple(%relu, %mean, %var)
})",
                   shape, features);
}

}  // namespace tpusim::testing
