// Layout assignment: the tiles chosen per type and shape, and the padding they cost.
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/layout.h"

namespace tpusim::passes {
namespace {

hlo::Shape Layout(const std::string& shape_text) {
  hlo::Result<hlo::HloModule> m =
      hlo::ParseHlo("HloModule t\nENTRY %e {\n ROOT %p = " + shape_text + " parameter(0)\n}\n");
  EXPECT_TRUE(m.ok()) << m.status().message();
  hlo::HloInstruction& p = *m->entry()->root();
  p.mutable_shape().layout = TpuLayout(p.shape());
  return p.shape();
}

TEST(PassLayout, TilesPerTypeAndShape) {
  EXPECT_EQ(Layout("f32[100,200]").ToString(), "f32[100,200]{1,0:T(8,128)}");
  EXPECT_EQ(Layout("bf16[64,256]").ToString(), "bf16[64,256]{1,0:T(8,128)(2,1)}");
  EXPECT_EQ(Layout("s8[16,128]").ToString(), "s8[16,128]{1,0:T(8,128)(4,1)}");
  EXPECT_EQ(Layout("f32[4,3,5]").ToString(), "f32[4,3,5]{2,1,0:T(4,128)}");
  EXPECT_EQ(Layout("f32[1,512]").ToString(), "f32[1,512]{1,0:T(2,128)}");
  EXPECT_EQ(Layout("bf16[2,300]").ToString(), "bf16[2,300]{1,0:T(2,128)(2,1)}");
  EXPECT_EQ(Layout("f32[1000]").ToString(), "f32[1000]{0:T(128)}");
  // An existing minor_to_major is kept; the tile follows the physical dimensions.
  EXPECT_EQ(Layout("f32[100,3]{0,1}").ToString(), "f32[100,3]{0,1:T(4,128)}");
}

TEST(PassLayout, PaddedBytes) {
  EXPECT_EQ(LogicalBytes(Layout("f32[100,200]")), 100 * 200 * 4);
  EXPECT_EQ(PaddedBytes(Layout("f32[100,200]")), 104 * 256 * 4);
  EXPECT_EQ(PaddedBytes(Layout("bf16[2,300]")), 2 * 384 * 2);
  EXPECT_EQ(PaddedBytes(Layout("f32[1000]")), 1024 * 4);
  EXPECT_EQ(PaddedBytes(Layout("f32[7,8,128]")), 7 * 8 * 128 * 4);
  EXPECT_EQ(PaddedBytes(Layout("f32[100,3]{0,1}")), 4 * 128 * 4);
  EXPECT_EQ(PaddedBytes(Layout("f32[]")), 4);
  // Untiled shapes count their logical bytes.
  hlo::Shape plain = hlo::Shape::Array(hlo::PrimitiveType::kBF16, {3, 5});
  EXPECT_EQ(PaddedBytes(plain), 30);
}

TEST(PassLayout, AssignsEveryShapeAndReportsPadding) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(R"(HloModule t
ENTRY %e {
  %p = f32[8,128] parameter(0)
  %q = bf16[3,100] parameter(1)
  %c = f32[3,100] convert(bf16[3,100] %q)
  %s = f32[] constant(2)
  %t = (f32[8,128], bf16[3,100]) tuple(f32[8,128] %p, bf16[3,100] %q)
  ROOT %a = f32[8,128] add(f32[8,128] %p, f32[8,128] %p)
})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  LayoutAssignmentPass pass;
  hlo::Result<bool> changed = pass.Run(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(m->entry()->Find("q")->shape().ToString(), "bf16[3,100]{1,0:T(4,128)(2,1)}");
  EXPECT_EQ(m->entry()->Find("s")->shape().ToString(), "f32[]");
  EXPECT_EQ(m->entry()->Find("t")->shape().ToString(),
            "(f32[8,128]{1,0:T(8,128)}, bf16[3,100]{1,0:T(4,128)(2,1)})");

  const PaddingReport& r = pass.padding_report();
  ASSERT_EQ(r.ops.size(), 6u);
  const PaddingEntry* p = r.Find("p");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->logical_bytes, 4096);
  EXPECT_EQ(p->padded_bytes, 4096);
  EXPECT_DOUBLE_EQ(p->waste_percent, 0);
  const PaddingEntry* q = r.Find("q");
  EXPECT_EQ(q->logical_bytes, 600);
  EXPECT_EQ(q->padded_bytes, 4 * 128 * 2);
  EXPECT_NEAR(q->waste_percent, 100.0 * (1024 - 600) / 1024, 1e-9);
  EXPECT_EQ(r.Find("t")->padded_bytes, 4096 + 1024);

  EXPECT_TRUE(hlo::VerifyModule(*m).ok());
  std::string text = hlo::PrintModule(*m);
  hlo::Result<hlo::HloModule> again = hlo::ParseHlo(text);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(hlo::PrintModule(*again), text);
  // A second run finds nothing left to do.
  hlo::Result<bool> twice = LayoutAssignmentPass().Run(*m);
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(*twice);
}

TEST(PassLayout, EntryComputationLayoutFollows) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(
      "HloModule t, entry_computation_layout={(f32[4,256]{1,0}, bf16[64]{0})->f32[4,256]{1,0}}\n"
      "ENTRY %e {\n %p = f32[4,256] parameter(0)\n %q = bf16[64] parameter(1)\n"
      " ROOT %n = f32[4,256] negate(f32[4,256] %p)\n}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(LayoutAssignmentPass().Run(*m).ok());
  std::string text = hlo::PrintModule(*m);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "HloModule t, entry_computation_layout={(f32[4,256]{1,0:T(4,128)}, "
            "bf16[64]{0:T(128)})->f32[4,256]{1,0:T(4,128)}}");
  hlo::Result<hlo::HloModule> again = hlo::ParseHlo(text);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(hlo::PrintModule(*again), text);
}

TEST(PassLayout, ExistingTilesKept) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(
      "HloModule t\nENTRY %e {\n ROOT %p = f32[8,256]{1,0:T(8,256)} parameter(0)\n}\n");
  ASSERT_TRUE(m.ok());
  hlo::Result<bool> changed = LayoutAssignmentPass().Run(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(m->entry()->root()->shape().ToString(), "f32[8,256]{1,0:T(8,256)}");
}

}  // namespace
}  // namespace tpusim::passes
