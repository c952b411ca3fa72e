// Parser: what current XLA prints beyond the core grammar: the stack-frame tables and
// stack_frame_id, Shardy's mesh form of replica groups, shardings in every printed form.
#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/sharding.h"

namespace tpusim::hlo {
namespace {

// The tables as XLA 0.11 prints them (gen.py's all_to_all module, shortened).
constexpr char kFramed[] = R"(HloModule jit_f, num_partitions=8

FileNames
1 "gen.py"

FunctionNames
1 "<module>"
2 "run"
3 "run.<locals>.<lambda>"

FileLocations
1 {file_name_id=1 function_name_id=1 line=554 end_line=554 column=8 end_column=8}
2 {file_name_id=1 function_name_id=2 line=537 end_line=537 column=8 end_column=8}
3 {file_name_id=1 function_name_id=3 line=536 end_line=536 column=25 end_column=25}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=3}


ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p), metadata={op_name="jit(f)/neg" stack_frame_id=3}
}
)";

TEST(XlaForms, StackFrameTablesParseResolveAndPrint) {
  Result<HloModule> m = ParseHlo(kFramed, "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->stack_frames.stack_frames.size(), 3u);
  // Frame 3's printed parent 3 is frame 2 (printed parents are one more than the id).
  std::vector<SourceFrame> frames = ResolveStackFrame(m->stack_frames, 3);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].function, "run.<locals>.<lambda>");
  EXPECT_EQ(frames[0].line, 536);
  EXPECT_EQ(frames[1].function, "run");
  EXPECT_EQ(frames[2].function, "<module>");
  EXPECT_EQ(frames[2].file, "gen.py");
  EXPECT_TRUE(ResolveStackFrame(m->stack_frames, 9).empty());
  // Printed and parsed again: the same tables.
  Result<HloModule> again = ParseHlo(PrintModule(*m), "again.hlo");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->stack_frames, m->stack_frames);
}

TEST(XlaForms, StackFrameErrorsNameTheEntry) {
  std::string bad = kFramed;
  bad.replace(bad.find("file_location_id=3"), 18, "file_location_id=7");
  Result<HloModule> m = ParseHlo(bad, "m.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "m.hlo:3:1: StackFrames entry 3 names a location or parent frame that does not "
            "exist");
  std::string field = kFramed;
  field.replace(field.find("end_column=25"), 13, "colour=25");
  EXPECT_NE(ParseHlo(field, "m.hlo")
                .status()
                .message()
                .find("unknown field 'colour' in "
                      "FileLocations"),
            std::string::npos);
}

// Found by the parser fuzzer (stop 20): a table given twice merged its ids, and the
// printed module, one table with both halves, no longer parsed.
TEST(XlaForms, ATableGivenTwiceIsAnError) {
  std::string twice = kFramed;
  const size_t at = twice.find("FunctionNames");
  twice.insert(at, "FunctionNames\n1 \"again\"\n\n");
  Result<HloModule> m = ParseHlo(twice, "m.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("a second FunctionNames table (each table comes once)"),
            std::string::npos)
      << m.status().message();
}

// `%t#1` (XLA's before-optimization dumps): element 1 of tuple %t.
TEST(XlaForms, TupleElementOperands) {
  Result<HloModule> m = ParseHlo(
      "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  b = s32[3] parameter(1)\n"
      "  t = (f32[2], s32[3]) tuple(a, b)\n  ROOT n = s32[3] negate(t#1)\n}\n",
      "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const HloInstruction* gte = m->entry()->root()->operand(0);
  EXPECT_EQ(gte->opcode(), Opcode::kGetTupleElement);
  EXPECT_EQ(gte->GetInt("index"), 1);
  EXPECT_EQ(gte->operand(0)->name(), "t");
  Result<HloModule> bad = ParseHlo(
      "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  t = (f32[2]) tuple(a)\n"
      "  ROOT n = f32[2] negate(t#4)\n}\n",
      "m.hlo");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "m.hlo:5:27: '%t#4': %t has no tuple element 4");
}

std::vector<std::vector<int64_t>> Groups(const std::string& attr) {
  std::string text =
      "HloModule m, num_partitions=8\nadd {\n  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
      "ENTRY e {\n  p = f32[8] parameter(0)\n"
      "  ROOT r = f32[8] all-reduce(p), channel_id=1, replica_groups=" +
      attr + ", use_global_device_ids=true, to_apply=add\n}\n";
  Result<HloModule> m = ParseHlo(text, "m.hlo");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  const ReplicaGroups* g = m->entry()->root()->replica_groups();
  // The mesh form prints back as written.
  EXPECT_NE(PrintModule(*m).find("replica_groups=" + attr + ","), std::string::npos);
  return g->groups;
}

TEST(XlaForms, MeshReplicaGroupsExpandAsXlaDoes) {
  using G = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(Groups("mesh['x'=8] {'x'}"), (G{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(Groups("mesh['a'=2,'b'=4] {'b'}"), (G{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(Groups("mesh['a'=2,'b'=4] {'a'}"), (G{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(Groups("mesh['a'=2,'b'=4] {'b','a'}"), (G{{0, 4, 1, 5, 2, 6, 3, 7}}));
  // Sub-axis 'x':(1)2 of x=8: the outermost pair... reshape [8] -> [1,2,4], group over the 2.
  EXPECT_EQ(Groups("mesh['x'=8] {'x':(1)2}"), (G{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(Groups("mesh['x'=8] {'x':(4)2}"), (G{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(Groups("mesh['a'=2,'b'=4], device_ids=([2,4]<=[4,2]T(1,0)) {'a'}"),
            (G{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  Result<HloModule> bad = ParseHlo(
      "HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n"
      "  ROOT r = f32[8] all-to-all(p), replica_groups=mesh['x'=8] {'y'}, dimensions={0}\n}\n",
      "m.hlo");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m.hlo:4:49: bad mesh replica groups "
                                        "'mesh['x'=8] {'y'}': axis 'y' is not in the mesh"),
            std::string::npos)
      << bad.status().message();
}

TEST(XlaForms, ShardingsInEveryPrintedForm) {
  auto parse = [](const std::string& s) {
    Result<HloSharding> r = ParseSharding(s);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value() : HloSharding{};
  };
  EXPECT_EQ(parse("{replicated}").kind, HloSharding::Kind::kReplicated);
  EXPECT_EQ(parse("{manual}").kind, HloSharding::Kind::kManual);
  EXPECT_EQ(parse("{maximal device=3}").device, 3);
  HloSharding rows = parse("{devices=[8,1]<=[8]}");
  EXPECT_EQ(rows.ShardsAlong(0), 8);
  EXPECT_EQ(rows.ShardsAlong(1), 1);
  EXPECT_EQ(rows.TileIndexOf(5), (std::vector<int64_t>{5, 0}));
  HloSharding partial = parse("{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(partial.ShardsAlong(0), 2);
  EXPECT_EQ(partial.TileIndexOf(5), (std::vector<int64_t>{1, 0}));
  HloSharding transposed = parse("{devices=[4,2]<=[2,4]T(1,0)}");
  EXPECT_EQ(transposed.devices, (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(parse("{devices=[2]1,0}").devices, (std::vector<int64_t>{1, 0}));
  HloSharding tuple = parse("{{devices=[8,1,1]<=[8]}, {replicated}}");
  ASSERT_EQ(tuple.elements.size(), 2u);
  EXPECT_EQ(tuple.elements[0].ShardsAlong(0), 8);
  // Shardy's mesh form: dim 0 over x, the rest replicated.
  HloSharding mesh = parse("{mesh['x'=8], [{'x'}, {}]}");
  EXPECT_EQ(mesh.ToString(), "{devices=[8,1]<=[8]}");
  EXPECT_EQ(parse("{mesh['a'=2,'b'=4], [{'b'}, {}]}").ToString(),
            "{devices=[4,1,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}");
  EXPECT_EQ(parse("{mesh[], replicated}").kind, HloSharding::Kind::kReplicated);
  EXPECT_FALSE(ParseSharding("{devices=[3,1]<=[8]}").ok());
  EXPECT_FALSE(ParseSharding("{mesh['x'=8], [{'y'}]}").ok());
}

}  // namespace
}  // namespace tpusim::hlo
