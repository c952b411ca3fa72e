// Modules of the kernel-window tests (lowering and values): kernels that read none of each
// other's results, beside a dot and the exponential that reads it.
#pragma once

namespace tpusim::testing {

// d, then e = exp(d) (dependent), then n, s and the fused tanh(x) * y, each independent of
// the one before: the windows alternate banks 0, 1, 0, 1.
inline constexpr const char* kIndependentKernels = R"(HloModule windows

ENTRY %main (x: f32[512,1024], y: f32[512,1024], a: f32[256,512], b: f32[512,384], u: f32[64,1024], v: f32[2048,1024]) -> (f32[512,1024], f32[256,384], f32[256,384], f32[64,1024], f32[2048,1024]) {
  %x = f32[512,1024]{1,0} parameter(0)
  %y = f32[512,1024]{1,0} parameter(1)
  %a = f32[256,512]{1,0} parameter(2)
  %b = f32[512,384]{1,0} parameter(3)
  %u = f32[64,1024]{1,0} parameter(4)
  %v = f32[2048,1024]{1,0} parameter(5)
  %t = f32[512,1024]{1,0} tanh(%x)
  %d = f32[256,384]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %e = f32[256,384]{1,0} exponential(%d)
  %m = f32[512,1024]{1,0} multiply(%t, %y)
  %n = f32[64,1024]{1,0} negate(%u)
  %s = f32[2048,1024]{1,0} sqrt(%v)
  ROOT %r = (f32[512,1024]{1,0}, f32[256,384]{1,0}, f32[256,384]{1,0}, f32[64,1024]{1,0}, f32[2048,1024]{1,0}) tuple(%m, %d, %e, %n, %s)
}
)";

}  // namespace tpusim::testing
