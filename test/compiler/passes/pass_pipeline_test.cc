// The pass pipeline: verification after each pass, errors naming the pass, IR dumps, and
// the default pipeline end to end through CompileToHlo.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/hlo_pipeline.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/pipeline.h"

namespace tpusim::passes {
namespace {

hlo::HloModule Parse(const std::string& text) {
  hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(m).value();
}

const char* kMlp = R"(HloModule mlp
ENTRY %e {
  %x = f32[8,256] parameter(0)
  %w = f32[256,128] parameter(1)
  %bias = f32[128] parameter(2)
  %dot = f32[8,128] dot(f32[8,256] %x, f32[256,128] %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bb = f32[8,128] broadcast(f32[128] %bias), dimensions={1}
  %add = f32[8,128] add(f32[8,128] %dot, f32[8,128] %bb)
  %one = f32[] constant(1)
  %ones = f32[8,128] broadcast(f32[] %one), dimensions={}
  %scaled = f32[8,128] multiply(f32[8,128] %add, f32[8,128] %ones)
  %zero = f32[] constant(0)
  %zeros = f32[8,128] broadcast(f32[] %zero), dimensions={}
  %unused = f32[8,128] exponential(f32[8,128] %dot)
  ROOT %relu = f32[8,128] maximum(f32[8,128] %scaled, f32[8,128] %zeros)
})";

// Breaks the root's shape and claims a change, so the verifier must object.
class BreakRootPass : public HloPass {
 public:
  std::string_view name() const override { return "break-root"; }
  hlo::Result<bool> Run(hlo::HloModule& m) override {
    m.entry()->root()->mutable_shape().dims = {3};
    return true;
  }
};

class FailingPass : public HloPass {
 public:
  std::string_view name() const override { return "always-fails"; }
  hlo::Result<bool> Run(hlo::HloModule&) override { return hlo::Status::Error("no luck"); }
};

TEST(PassPipeline, VerifierErrorNamesThePass) {
  hlo::HloModule m = Parse(kMlp);
  PassPipeline p;
  p.AddPass<DcePass>();
  p.AddPass<BreakRootPass>();
  p.AddPass<DcePass>();
  hlo::Result<bool> r = p.Run(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("verifier failed after pass 'break-root': %relu", 0), 0u)
      << r.status().message();
  ASSERT_EQ(p.log().size(), 2u);  // the third pass never ran
  EXPECT_EQ(p.log()[0].name, "dce");
  EXPECT_TRUE(p.log()[0].changed);
}

TEST(PassPipeline, PassErrorNamesThePass) {
  hlo::HloModule m = Parse(kMlp);
  PassPipeline p;
  p.AddPass<FailingPass>();
  hlo::Result<bool> r = p.Run(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "pass 'always-fails' failed: no luck");
}

TEST(PassPipeline, DumpsEachPassAtomically) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(testing::TempDir()) / "tpusim_pass_dumps";
  fs::remove_all(dir);
  hlo::HloModule m = Parse(kMlp);
  tpusim::CompileOptions options;
  options.dump_dir = dir.string();
  hlo::Result<tpusim::CompileReport> r = tpusim::CompileToHlo(m, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"00-input.hlo",
                                             "01-batch-sharding.hlo",
                                             "02-spmd-partitioner.hlo",
                                             "03-async-conversion.hlo",
                                             "04-transposed-dot.hlo",
                                             "05-all-reduce-combiner.hlo",
                                             "06-contraction-defusion.hlo",
                                             "07-dce.hlo",
                                             "08-algsimp.hlo",
                                             "09-dce.hlo",
                                             "10-space-to-depth.hlo",
                                             "11-conv-canonicalization.hlo",
                                             "12-bf16-conversion-folding.hlo",
                                             "13-dce.hlo",
                                             "14-layout-assignment.hlo",
                                             "15-elementwise-fusion.hlo",
                                             "16-batch-norm-fusion.hlo",
                                             "17-fusion-merger.hlo",
                                             "18-multi-output-fusion.hlo",
                                             "19-fusion-merger.hlo",
                                             "20-convolution-statistics-fusion.hlo",
                                             "21-dce.hlo",
                                             "22-memory-scheduler.hlo",
                                             "23-rematerialization.hlo",
                                             "24-async-collective-creator.hlo",
                                             "25-memory-planning.hlo"}));
  std::ifstream in(dir / "25-memory-planning.hlo");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), r->hlo);
  fs::remove_all(dir);
}

TEST(PassPipeline, CompileToHloEndToEnd) {
  hlo::HloModule m = Parse(kMlp);
  hlo::Result<tpusim::CompileReport> r = tpusim::CompileToHlo(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const tpusim::CompileReport& rep = *r;
  std::vector<std::string> names;
  for (const PassLogEntry& e : rep.passes) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"batch-sharding",
                                             "spmd-partitioner",
                                             "async-conversion",
                                             "transposed-dot",
                                             "all-reduce-combiner",
                                             "contraction-defusion",
                                             "dce",
                                             "algsimp",
                                             "dce",
                                             "space-to-depth",
                                             "conv-canonicalization",
                                             "bf16-conversion-folding",
                                             "dce",
                                             "layout-assignment",
                                             "elementwise-fusion",
                                             "batch-norm-fusion",
                                             "fusion-merger",
                                             "multi-output-fusion",
                                             "fusion-merger",
                                             "convolution-statistics-fusion",
                                             "dce",
                                             "memory-scheduler",
                                             "rematerialization",
                                             "async-collective-creator",
                                             "memory-planning"}));
  EXPECT_FALSE(rep.passes[0].changed);   // one device: nothing to split
  EXPECT_FALSE(rep.passes[1].changed);   // no sharding
  EXPECT_FALSE(rep.passes[2].changed);   // no async pair
  EXPECT_FALSE(rep.passes[3].changed);   // no transposed dot
  EXPECT_FALSE(rep.passes[4].changed);   // no all-reduce
  EXPECT_FALSE(rep.passes[5].changed);   // no fusion holds a dot
  EXPECT_TRUE(rep.passes[6].changed);    // %unused
  EXPECT_TRUE(rep.passes[7].changed);    // multiply by one
  EXPECT_FALSE(rep.passes[9].changed);   // no strided convolution
  EXPECT_FALSE(rep.passes[15].changed);  // no batch norm
  // The optimized module: dot, then one loop fusion of bias-add + relu.
  hlo::HloModule out = Parse(rep.hlo);
  EXPECT_TRUE(hlo::VerifyModule(out).ok());
  EXPECT_EQ(hlo::PrintModule(out), rep.hlo);
  const hlo::HloInstruction* root = out.entry()->root();
  EXPECT_EQ(root->opcode(), hlo::Opcode::kFusion);
  ASSERT_EQ(root->operand_count(), 3u);  // bias, dot, the scalar zero
  EXPECT_EQ(root->operand(1)->opcode(), hlo::Opcode::kDot);
  EXPECT_EQ(out.entry()->Find("unused"), nullptr);
  EXPECT_EQ(out.entry()->Find("scaled"), nullptr);
  EXPECT_NE(rep.hlo.find("f32[8,256]{1,0:T(8,128)} parameter(0)"), std::string::npos);
  // %bias f32[128] pads to one tile; %dot f32[8,128] wastes nothing.
  ASSERT_NE(rep.padding.Find("dot"), nullptr);
  EXPECT_DOUBLE_EQ(rep.padding.Find("dot")->waste_percent, 0);
  EXPECT_EQ(rep.peak_hbm_bytes, rep.memory.peak_bytes);
  // x, w, bias live throughout; the scalar zero, dot and the fusion output at the end.
  EXPECT_EQ(rep.peak_hbm_bytes, (8 * 256 + 256 * 128 + 128 + 1 + 8 * 128 * 2) * 4);
}

TEST(PassPipeline, CompileReportsOutOfMemory) {
  hlo::HloModule m = Parse(kMlp);
  tpusim::CompileOptions options;
  options.hbm_capacity_bytes = 64 * 1024;
  hlo::Result<tpusim::CompileReport> r = tpusim::CompileToHlo(m, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(
                "pass 'memory-planning' failed: RESOURCE_EXHAUSTED: Ran out of memory in memory "
                "space hbm. Used 144.50K of 64.00K hbm. Exceeded hbm capacity by 80.50K.",
                0),
            0u)
      << r.status().message();
  // Rematerialization tried first (the weights and the dot's output are all there is).
  EXPECT_NE(r.status().message().find("Rematerialization found no value to recompute"),
            std::string::npos)
      << r.status().message();
}

TEST(PassPipeline, InvalidInputIsRejectedBeforeAnyPass) {
  hlo::HloModule m = Parse(
      "HloModule t\nENTRY %e {\n %p = f32[4] parameter(0)\n ROOT %n = f32[5] negate(f32[4] "
      "%p)\n}\n");
  PassPipeline p = tpusim::DefaultPipeline();
  hlo::Result<bool> r = p.Run(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("pipeline 'default': invalid input module: %n", 0), 0u)
      << r.status().message();
  EXPECT_TRUE(p.log().empty());
}

TEST(PassPipeline, SecondCompileChangesNothing) {
  hlo::HloModule m = Parse(kMlp);
  hlo::Result<tpusim::CompileReport> first = tpusim::CompileToHlo(m);
  ASSERT_TRUE(first.ok()) << first.status().message();
  hlo::Result<tpusim::CompileReport> second = tpusim::CompileToHlo(m);
  ASSERT_TRUE(second.ok()) << second.status().message();
  for (const PassLogEntry& e : second->passes) EXPECT_FALSE(e.changed) << e.name;
  EXPECT_EQ(second->hlo, first->hlo);
  EXPECT_EQ(second->peak_hbm_bytes, first->peak_hbm_bytes);
}

TEST(PassPipeline, ShippedExamplesCompile) {
  namespace fs = std::filesystem;
  int compiled = 0;
  for (const auto& e : fs::directory_iterator("examples/hlo")) {
    if (e.path().extension() != ".hlo") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    hlo::Result<hlo::HloModule> m = hlo::ParseHlo(text.str(), e.path().string());
    ASSERT_TRUE(m.ok()) << m.status().message();
    hlo::Result<tpusim::CompileReport> r = tpusim::CompileToHlo(*m);
    ASSERT_TRUE(r.ok()) << e.path() << ": " << r.status().message();
    hlo::Result<hlo::HloModule> again = hlo::ParseHlo(r->hlo);
    ASSERT_TRUE(again.ok()) << e.path() << ": " << again.status().message();
    EXPECT_TRUE(hlo::VerifyModule(*again).ok()) << e.path();
    ++compiled;
  }
  EXPECT_GE(compiled, 1);
}

}  // namespace
}  // namespace tpusim::passes
