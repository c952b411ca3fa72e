// The convolution kernel (compiler/lowering/conv/conv_kernel.h) on one simulated core: values
// against a direct host convolution, MXU occupancy targets in timing-only runs, and the
// shapes it refuses. The 8192^3 dot target of MatmulKernel is asserted here too.
#include "compiler/lowering/conv/conv_kernel.h"

#include <gmock/gmock.h>

#include <cmath>
#include <iostream>
#include <stdexcept>

#include "compiler/eval/evaluator.h"
#include "compiler/lowering/conv/conv_plan.h"
#include "compiler/lowering/dot/matmul_kernel.h"
#include "kernel_test_util.h"
#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using lowering::ConvShape;
using namespace testing;
using ::testing::HasSubstr;

ConvShape Shape(int64_t batch, int64_t hw, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                int64_t pad_lo, int64_t pad_hi) {
  ConvShape s;
  s.batch = batch, s.h = s.w = hw, s.cin = cin, s.cout = cout, s.kh = s.kw = k;
  s.stride = stride, s.pad_lo = pad_lo, s.pad_hi = pad_hi;
  s.kernel = (batch * hw * hw * cin * 2 + 0xffff) & ~int64_t{0xffff};
  s.output = s.kernel + ((k * k * cin * cout * 2 + 0xffff) & ~int64_t{0xffff});
  s.tag = "convolution.1";
  const CoreConfig core = LoadConfig("v3-8").core;
  s.mxus = core.mxus, s.vmem_bytes = core.vmem_bytes, s.smem_bytes = core.smem_bytes;
  s.acc_rows = core.mxu_result_buffer_rows;
  return s;
}

// Runs `s` with random bf16 input and kernel; checks every output against a direct
// convolution (exact bf16 products summed in double; the MXU sums in f32).
void ExpectMatchesReference(const ConvShape& s) {
  SingleCoreRun run(lowering::ConvKernel(s));
  const int64_t oh = lowering::ConvOutputSize(s),
                ow = (s.w + s.pad_lo + s.pad_hi - s.kw) / s.stride + 1;
  auto in = RandomBf16Values(s.batch * s.h * s.w * s.cin, 11);
  auto k = RandomBf16Values(s.kh * s.kw * s.cin * s.cout, 12);
  auto in_bits = ToBf16Bits(in), k_bits = ToBf16Bits(k);
  run.core->hbm().Write(s.input, in_bits.data(), in_bits.size() * 2);
  run.core->hbm().Write(s.kernel, k_bits.data(), k_bits.size() * 2);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> out(s.batch * oh * ow * s.cout);
  run.core->hbm().Read(s.output, out.data(), out.size() * 4);
  std::vector<double> ref(s.cout), mag(s.cout);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        std::fill(ref.begin(), ref.end(), 0.0), std::fill(mag.begin(), mag.end(), 0.0);
        for (int64_t dy = 0; dy < s.kh; ++dy)
          for (int64_t dx = 0; dx < s.kw; ++dx) {
            const int64_t iy = y * s.stride + dy - s.pad_lo, ix = x * s.stride + dx - s.pad_lo;
            if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
            for (int64_t ci = 0; ci < s.cin; ++ci) {
              const double v = in[((n * s.h + iy) * s.w + ix) * s.cin + ci];
              const float* w = &k[((dy * s.kw + dx) * s.cin + ci) * s.cout];
              for (int64_t co = 0; co < s.cout; ++co)
                ref[co] += v * w[co], mag[co] += std::fabs(v * w[co]);
            }
          }
        for (int64_t co = 0; co < s.cout; ++co)
          ASSERT_NEAR(out[((n * oh + y) * ow + x) * s.cout + co], ref[co], 1e-5 * mag[co] + 1e-6)
              << "output [" << n << "," << y << "," << x << "," << co << "]";
      }
}

// Timing-only run; returns the lower busy percentage of the MXUs.
double MxuBusyPercent(const std::string& program, const std::string& what) {
  SingleCoreRun run(program, /*functional=*/false);
  RunReport r = run.Run();
  EXPECT_TRUE(r.ok) << r.error;
  double busy = 100;
  for (const UnitReport& u : r.units)
    if (u.name == "mxu0" || u.name == "mxu1") busy = std::min(busy, u.busy_percent);
  std::cout << what << ": " << r.cycles << " cycles, MXU busy " << busy << "%\n";
  return busy;
}

// The project's ground truth: the HLO evaluator on the same convolution (f32 operands at
// DEFAULT precision are rounded to bf16, as the MXU reads them; sums in f32).
TEST(ConvKernel, MatchesReferenceEvaluator) {
  const ConvShape s = Shape(2, 6, 128, 128, 3, 2, 1, 1);
  SingleCoreRun run(lowering::ConvKernel(s));
  auto in = RandomBf16Values(2 * 6 * 6 * 128, 21), k = RandomBf16Values(3 * 3 * 128 * 128, 22);
  auto in_bits = ToBf16Bits(in), k_bits = ToBf16Bits(k);
  run.core->hbm().Write(s.input, in_bits.data(), in_bits.size() * 2);
  run.core->hbm().Write(s.kernel, k_bits.data(), k_bits.size() * 2);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> out(2 * 3 * 3 * 128);
  run.core->hbm().Read(s.output, out.data(), out.size() * 4);
  const std::string hlo =
      "HloModule conv\nENTRY %e {\n  %i = f32[2,6,6,128] parameter(0)\n"
      "  %k = f32[3,3,128,128] parameter(1)\n"
      "  ROOT %c = f32[2,3,3,128] convolution(%i, %k), window={size=3x3 stride=2x2 "
      "pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n";
  auto as_value = [](const std::vector<float>& v, std::vector<int64_t> dims) {
    return eval::Value::FromVector(hlo::PrimitiveType::kF32, std::move(dims),
                                   std::vector<double>(v.begin(), v.end()));
  };
  auto ref = eval::EvaluateText(hlo, {as_value(in, {2, 6, 6, 128}), as_value(k, {3, 3, 128, 128})});
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  const std::vector<double>& want = ref.value().at(0).data;
  ASSERT_EQ(want.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-3) << "element " << i;
}

TEST(ConvKernel, Same3x3MatchesReference) {
  ExpectMatchesReference(Shape(2, 8, 128, 256, 3, 1, 1, 1));
}

TEST(ConvKernel, Stride2MatchesReference) {
  ExpectMatchesReference(Shape(2, 8, 128, 128, 3, 2, 0, 1));
}

TEST(ConvKernel, OneByOneMatchesReference) {
  ExpectMatchesReference(Shape(2, 8, 256, 256, 1, 1, 0, 0));
}

TEST(ConvKernel, OneByOneStride2MatchesReference) {
  ExpectMatchesReference(Shape(2, 8, 256, 384, 1, 2, 0, 0));
}

TEST(ConvKernel, PaddedChannelsMatchReference) {
  ExpectMatchesReference(Shape(2, 8, 64, 64, 3, 1, 1, 1));
}

TEST(ConvKernel, OddInputChannelsStride2MatchReference) {
  ExpectMatchesReference(Shape(1, 16, 3, 64, 7, 2, 3, 3));  // the ResNet stem, small
}

TEST(ConvKernel, FoldedTapsInBandsMatchReference) {
  ConvShape s = Shape(2, 32, 3, 64, 7, 2, 3, 3);  // the stem, taps folded into cin
  s.acc_rows = 40;  // bands of lines: the staged input is re-zeroed per chunk
  ExpectMatchesReference(s);
}

// cin 64 with a 01io kernel: pairs of taps fill each 128-row weight tile, so the 9 taps of a
// 3x3 take 5 tiles instead of 9 (ResNet's first stage: half the MXU passes of padding).
TEST(ConvKernel, SixtyFourChannelsFoldTwoTapsPerTile) {
  const ConvShape s = Shape(2, 8, 64, 64, 3, 1, 1, 1);
  const lowering::ConvPlan p = lowering::PlanConv(s);
  EXPECT_TRUE(p.fold);
  EXPECT_EQ(p.fold_taps_per_block(), 2);
  EXPECT_EQ(p.cinb, 5);
  EXPECT_EQ(p.weight_taps, 1);
  ExpectMatchesReference(s);
}

TEST(ConvKernel, FortyEightChannelsFoldMatchReference) {  // 2 taps of 48 per tile
  const ConvShape s = Shape(1, 16, 48, 130, 3, 1, 1, 1);
  EXPECT_TRUE(lowering::PlanConv(s).fold);
  EXPECT_FALSE(lowering::PlanConv(Shape(1, 16, 48, 130, 3, 2, 1, 1)).fold);  // strided: phases
  ExpectMatchesReference(s);
}

TEST(ConvKernel, ChannelTailsAndNonSquareImagesMatchReference) {
  ConvShape s = Shape(3, 5, 192, 130, 3, 1, 1, 1);  // cin and cout not multiples of 128
  s.w = 7;
  s.output = s.kernel + (uint64_t{1} << 20);
  ExpectMatchesReference(s);
}

TEST(ConvKernel, BandsOfLinesMatchReference) {
  ConvShape s = Shape(1, 12, 128, 128, 3, 1, 1, 1);
  s.acc_rows = 64;  // forces bands of output lines, with top, middle and bottom kinds
  ExpectMatchesReference(s);
}

TEST(ConvKernel, HighAddressesOneMxuMatchReference) {
  ConvShape s = Shape(2, 6, 128, 128, 3, 1, 1, 1);
  s.input += uint64_t{5} << 30, s.kernel += uint64_t{9} << 30, s.output += uint64_t{13} << 30;
  s.mxus = 1;
  ExpectMatchesReference(s);
}

TEST(ConvKernel, Resnet3x3At28KeepsMxusBusyAtLeast70Percent) {
  EXPECT_GE(MxuBusyPercent(lowering::ConvKernel(Shape(128, 28, 256, 256, 3, 1, 1, 1)),
                           "3x3 256->256 28x28 batch 128"),
            70.0);
}

TEST(ConvKernel, ResnetDownsampling1x1Stride2KeepsMxusBusy) {
  EXPECT_GE(MxuBusyPercent(lowering::ConvKernel(Shape(128, 14, 1024, 2048, 1, 2, 0, 0)),
                           "1x1 s2 1024->2048 14x14 batch 128"),
            85.0);
}

// cin 3: the 49 taps fold into two 128-row weight tiles (4 channels each); cout 64 pads to
// 128, so at most 49 x 3 / 256 x 64 / 128 of the MXUs' work is useful. Batch 8 keeps the
// run short.
TEST(ConvKernel, ResnetStemRunsWithPaddedChannels) {
  const ConvShape s = Shape(8, 224, 3, 64, 7, 2, 3, 3);
  SingleCoreRun run(lowering::ConvKernel(s), /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const double peak = 2.0 * 128 * 128 * run.board.core.mxus;
  const double useful = 100.0 * lowering::ConvFlops(s) / (peak * r.cycles);
  std::cout << "stem 7x7 s2 3->64 224x224 batch 8: " << r.cycles << " cycles, useful " << useful
            << "% of the MXUs\n";
  EXPECT_GT(useful, 10.0);
}

TEST(ConvKernel, Dot8192KeepsMxusBusyAtLeast90Percent) {
  EXPECT_GE(MxuBusyPercent(lowering::MatmulKernel(8192), "dot 8192^3"), 90.0);
}

TEST(ConvKernel, RefusesUnsupportedShapesSayingWhy) {
  auto message = [](ConvShape s) {
    try {
      lowering::ConvKernel(s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_THAT(message(Shape(2, 8, 3, 64, 3, 1, 1, 1)), HasSubstr("odd cin"));
  EXPECT_THAT(message(Shape(2, 7, 128, 128, 3, 2, 1, 1)), HasSubstr("multiple of the stride"));
  EXPECT_THAT(message(Shape(2, 8, 128, 128, 3, 1, 3, 0)), HasSubstr("padding"));
  EXPECT_THAT(message(Shape(2, 8, 128, 129, 1, 1, 0, 0)), HasSubstr("even cout"));
}

}  // namespace
}  // namespace tpusim::sim
