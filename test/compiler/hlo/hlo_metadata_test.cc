// Op metadata: XLA's metadata={...} fields, a fusion's root's when it has none, and the
// source line from source_file/source_line or the stack-frame tables (the user's frame
// before an installed package's).
#include <gtest/gtest.h>

#include "compiler/hlo/metadata.h"
#include "compiler/hlo/parser.h"

namespace tpusim::hlo {
namespace {

constexpr char kModule[] = R"(HloModule m

FileNames
1 "train.py"
2 "/usr/lib/python3/site-packages/flax/linen/linear.py"

FunctionNames
1 "<module>"
2 "__call__"

FileLocations
1 {file_name_id=1 function_name_id=1 line=42 end_line=42 column=4 end_column=4}
2 {file_name_id=2 function_name_id=2 line=700 end_line=700 column=8 end_column=8}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}


%neg (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p), metadata={op_name="jit(f)/neg" source_file="f.py" source_line=9}
}

ENTRY %main (x: f32[8]) -> (f32[8], f32[8], f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %a = f32[8]{0} abs(%x), metadata={op_type="Abs" op_name="jit(f)/Dense_0/\"abs\"" source_file="/tmp/f.py" source_line=17}
  %b = f32[8]{0} exponential(%x), metadata={op_name="jit(f)/Dense_0/dot_general" stack_frame_id=2}
  %c = f32[8]{0} sine(%x)
  %f = f32[8]{0} fusion(%x), kind=kLoop, calls=%neg
  ROOT %t = (f32[8], f32[8], f32[8], f32[8]) tuple(%a, %b, %c, %f)
}
)";

TEST(OpMetadata, FieldsAndSourceLines) {
  Result<HloModule> m = ParseHlo(kModule, "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const HloComputation& e = *m->entry();
  const OpMetadata a = MetadataOf(*e.Find("a"));
  EXPECT_EQ(a.op_type, "Abs");
  EXPECT_EQ(a.op_name, "jit(f)/Dense_0/\"abs\"");
  EXPECT_EQ(a.source_file, "/tmp/f.py");
  EXPECT_EQ(a.source_line, 17);
  EXPECT_EQ(SourceLocation(*m, *e.Find("a")), "/tmp/f.py:17");
  // Frame 2 (flax's linear.py) is called from frame 1 (train.py:42): the user's line.
  EXPECT_EQ(MetadataOf(*e.Find("b")).stack_frame_id, 2);
  EXPECT_EQ(SourceLocation(*m, *e.Find("b")), "train.py:42");
  EXPECT_EQ(MetadataOf(*e.Find("c")).op_name, "");
  EXPECT_EQ(SourceLocation(*m, *e.Find("c")), "");
  EXPECT_EQ(MetadataOf(*e.Find("f")).op_name, "jit(f)/neg");  // the fused root's
  EXPECT_EQ(SourceLocation(*m, *e.Find("f")), "f.py:9");
}

}  // namespace
}  // namespace tpusim::hlo
