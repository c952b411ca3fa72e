// An Adam update of one weight matrix, as a training step ends: the new first and second
// moments are results and feed the new weights (loop fusions after elementwise-fusion), so
// multi-output-fusion computes the three in one loop fusion. Shared by the pass's IR test and
// the values test.
#pragma once

namespace tpusim::testing {

inline constexpr const char* kAdamUpdate = R"(HloModule adam
ENTRY %e (g: f32[256,128], m: f32[256,128], v: f32[256,128], w: f32[256,128], lr: f32[]) -> (f32[256,128], f32[256,128], f32[256,128]) {
  %g = f32[256,128] parameter(0)
  %m = f32[256,128] parameter(1)
  %v = f32[256,128] parameter(2)
  %w = f32[256,128] parameter(3)
  %lr = f32[] parameter(4)
  %b1 = f32[] constant(0.9)
  %c1 = f32[] constant(0.1)
  %b2 = f32[] constant(0.999)
  %c2 = f32[] constant(0.001)
  %eps = f32[] constant(1e-08)
  %b1s = f32[256,128] broadcast(f32[] %b1), dimensions={}
  %c1s = f32[256,128] broadcast(f32[] %c1), dimensions={}
  %b2s = f32[256,128] broadcast(f32[] %b2), dimensions={}
  %c2s = f32[256,128] broadcast(f32[] %c2), dimensions={}
  %epss = f32[256,128] broadcast(f32[] %eps), dimensions={}
  %lrs = f32[256,128] broadcast(f32[] %lr), dimensions={}
  %m0 = f32[256,128] multiply(f32[256,128] %m, f32[256,128] %b1s)
  %g1 = f32[256,128] multiply(f32[256,128] %g, f32[256,128] %c1s)
  %m1 = f32[256,128] add(f32[256,128] %m0, f32[256,128] %g1)
  %v0 = f32[256,128] multiply(f32[256,128] %v, f32[256,128] %b2s)
  %gg = f32[256,128] multiply(f32[256,128] %g, f32[256,128] %g)
  %g2 = f32[256,128] multiply(f32[256,128] %gg, f32[256,128] %c2s)
  %v1 = f32[256,128] add(f32[256,128] %v0, f32[256,128] %g2)
  %root = f32[256,128] sqrt(f32[256,128] %v1)
  %den = f32[256,128] add(f32[256,128] %root, f32[256,128] %epss)
  %step = f32[256,128] divide(f32[256,128] %m1, f32[256,128] %den)
  %scaled = f32[256,128] multiply(f32[256,128] %step, f32[256,128] %lrs)
  %w1 = f32[256,128] subtract(f32[256,128] %w, f32[256,128] %scaled)
  ROOT %t = (f32[256,128], f32[256,128], f32[256,128]) tuple(f32[256,128] %w1, f32[256,128] %m1, f32[256,128] %v1)
})";

}  // namespace tpusim::testing
