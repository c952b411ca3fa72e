// The convolution kernel's output statistics (ConvShape::statistics): per channel, the sum
// of the bf16 results it wrote and of their squares, checked against those results summed
// on the host, over cout blocks split between the MXUs, a cout tail, several chunks and
// strided and folded convolutions.
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>

#include "compiler/lowering/conv/conv_kernel.h"
#include "compiler/lowering/conv/conv_plan.h"
#include "kernel_test_util.h"
#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using lowering::ConvShape;
using namespace testing;

uint64_t Align(int64_t bytes) { return (static_cast<uint64_t>(bytes) + 0xffff) & ~0xffffull; }

ConvShape Shape(int64_t batch, int64_t hw, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                int64_t pad) {
  ConvShape s;
  s.batch = batch, s.h = s.w = hw, s.cin = cin, s.cout = cout, s.kh = s.kw = k;
  s.stride = stride, s.pad_lo = s.pad_hi = pad;
  s.output_bf16 = s.statistics = true;
  const int64_t o = lowering::ConvOutputSize(s);
  s.kernel = Align(batch * hw * hw * cin * 2);
  s.output = s.kernel + Align(k * k * cin * cout * 2);
  s.sum = s.output + Align(batch * o * o * cout * 2);
  s.sum_squares = s.sum + Align(cout * 4);
  s.tag = "convolution.1";
  const CoreConfig core = LoadConfig("v3-8").core;
  s.mxus = core.mxus, s.vmem_bytes = core.vmem_bytes, s.smem_bytes = core.smem_bytes;
  s.acc_rows = core.mxu_result_buffer_rows;
  return s;
}

float FromBf16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

// Runs `s` on random operands; the statistics must match the host's sums of the bf16
// output the kernel wrote (the kernel sums in f32, in its own order).
void ExpectStatisticsOfTheOutput(const ConvShape& s) {
  SingleCoreRun run(lowering::ConvKernel(s));
  const int64_t o = lowering::ConvOutputSize(s);
  auto in = ToBf16Bits(RandomBf16Values(s.batch * s.h * s.w * s.cin, 31));
  auto k = ToBf16Bits(RandomBf16Values(s.kh * s.kw * s.cin * s.cout, 32));
  run.core->hbm().Write(s.input, in.data(), in.size() * 2);
  run.core->hbm().Write(s.kernel, k.data(), k.size() * 2);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<uint16_t> out(s.batch * o * o * s.cout);
  run.core->hbm().Read(s.output, out.data(), out.size() * 2);
  std::vector<float> sum(s.cout), squares(s.cout);
  run.core->hbm().Read(s.sum, sum.data(), sum.size() * 4);
  run.core->hbm().Read(s.sum_squares, squares.data(), squares.size() * 4);
  std::vector<double> want(s.cout), want_sq(s.cout), mag(s.cout);
  for (size_t i = 0; i < out.size(); ++i) {
    const double v = FromBf16(out[i]);
    const size_t c = i % s.cout;
    want[c] += v, want_sq[c] += v * v, mag[c] += std::fabs(v);
  }
  int64_t nonzero = 0;
  for (int64_t c = 0; c < s.cout; ++c) {
    nonzero += want_sq[c] > 0;
    ASSERT_NEAR(sum[c], want[c], 1e-5 * mag[c] + 1e-6) << "sum of channel " << c;
    ASSERT_NEAR(squares[c], want_sq[c], 1e-5 * want_sq[c] + 1e-6) << "squares of channel " << c;
  }
  EXPECT_EQ(nonzero, s.cout);  // every channel saw results
}

TEST(ConvStatistics, TwoCoutBlocksSplitOverTheMxus) {
  ExpectStatisticsOfTheOutput(Shape(2, 8, 128, 256, 3, 1, 1));
}

TEST(ConvStatistics, CoutTailAndStride2) {
  ExpectStatisticsOfTheOutput(Shape(2, 16, 64, 192, 1, 2, 0));
}

TEST(ConvStatistics, ManyChunksOfBands) {
  const ConvShape s = Shape(8, 56, 128, 128, 3, 1, 1);
  const lowering::ConvPlan p = lowering::PlanConv(s);
  EXPECT_GT(p.chunks, 2) << p.imgs << " images x " << p.band
                         << " lines";  // accumulated across chunks
  ExpectStatisticsOfTheOutput(s);
}

TEST(ConvStatistics, FoldedTaps) {
  const ConvShape s = Shape(2, 14, 64, 128, 3, 1, 1);
  ASSERT_TRUE(lowering::PlanConv(s).fold);
  ExpectStatisticsOfTheOutput(s);
}

TEST(ConvStatistics, NeedsABf16OutputAndWholeVregsOfRows) {
  ConvShape s = Shape(1, 7, 128, 128, 1, 1, 0);  // 49 rows per block: not whole vregs
  EXPECT_THROW(lowering::PlanConv(s), std::invalid_argument);
  s = Shape(2, 8, 128, 128, 1, 1, 0);
  s.output_bf16 = false;
  EXPECT_THROW(lowering::PlanConv(s), std::invalid_argument);
}

}  // namespace
}  // namespace tpusim::sim
