// The tpusim command line as users meet it: golden outputs, one-line errors with non-zero
// exit codes, and valid output files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test/cli/cli_test_util.h"

#include "traces/trace_validator.h"

namespace tpusim::cli {
namespace {
using ::testing::HasSubstr;
using ::testing::Not;

std::string Temp(const std::string& name) {
  return ::testing::TempDir() + "/tpusim_cli_" + std::to_string(::getpid()) + "_" + name;
}

// Compares a command's whole output with test/cli/golden/NAME (TPUSIM_UPDATE_GOLDEN=1
// rewrites the file).
void ExpectGolden(const std::string& command, const std::string& name) {
  Output o = Tpusim(command);
  EXPECT_EQ(o.status, 0) << o.text;
  const std::string path = "test/cli/golden/" + name;
  std::string golden = Slurp(path);
  if (std::getenv("TPUSIM_UPDATE_GOLDEN")) {
    std::ofstream(path) << o.text;
    golden = o.text;
  }
  EXPECT_EQ(o.text, golden) << command;
}

TEST(Cli, ExecMatmulKernelMatchesGolden) {
  ExpectGolden("exec examples/kernels/matmul_db.s --timing", "exec_matmul_db.txt");
}

TEST(Cli, RunDotOneScreenResultMatchesGolden) {
  ExpectGolden("run examples/hlo/dot_bf16.hlo --timing", "run_dot_bf16.txt");
}

TEST(Cli, ConfigsMatchesGolden) { ExpectGolden("configs", "configs.txt"); }

TEST(Cli, CompileOptimizedHloMatchesGolden) {
  ExpectGolden("compile examples/hlo/mlp_train_step.hlo", "compile_mlp_train_step.txt");
}

TEST(Cli, CompileIsaMatchesGolden) {
  ExpectGolden("compile examples/hlo/dot_bf16.hlo --emit isa", "compile_dot_bf16.s");
}

TEST(Cli, ExecWritesJsonWithTheDocumentedKeys) {
  std::string json = Temp("exec.json");
  Output o = Tpusim("exec examples/kernels/reduce_rows.s --json " + json);
  ASSERT_EQ(o.status, 0) << o.text;
  std::string text = Slurp(json);
  EXPECT_THAT(text, HasSubstr("\"cycles\": 2424"));
  EXPECT_THAT(text, HasSubstr("\"time_us\""));
  EXPECT_THAT(text, HasSubstr("\"busy_percent\""));
  std::remove(json.c_str());
}

TEST(Cli, RunDotMatchesTheEvaluatorAndWritesAValidTrace) {
  std::string trace = Temp("trace.json"), summary = Temp("summary.json");
  Output o = Tpusim("run examples/hlo/dot_bf16.hlo --trace " + trace + " --summary " + summary +
                    " --monitor");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("(match)"));
  EXPECT_THAT(o.text, HasSubstr("Utilization of TPU Matrix Units (higher is better): "));
  EXPECT_THAT(o.text, HasSubstr("TPU idle time (lower is better): "));
  EXPECT_THAT(traces::ValidateChromeTraceFile(trace), ::testing::IsEmpty());
  EXPECT_THAT(Slurp(summary), HasSubstr("\"mxu_utilization_percent\""));
  std::remove(trace.c_str());
  std::remove(summary.c_str());
}

// A trace over its event cap says so on the screen and in the file; --trace-step keeps one
// step's events, rebased to its start.
TEST(Cli, RunTraceCapAndStepWindow) {
  const std::string trace = Temp("cap.json");
  Output o = Tpusim("run examples/hlo/dot_bf16.hlo --timing --steps 2 --trace " + trace +
                    " --trace-max-events 10");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("note: the trace holds the first 10 events; "));
  EXPECT_NE(Slurp(trace).find("\"truncated\":true"), std::string::npos);
  o = Tpusim("run examples/hlo/dot_bf16.hlo --timing --steps 2 --trace " + trace +
             " --trace-step 1");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, Not(HasSubstr("note: the trace holds")));
  EXPECT_THAT(traces::ValidateChromeTraceFile(trace), ::testing::IsEmpty());
  const std::string window = Slurp(trace);  // step 1 on each core's Steps track, not step 0
  EXPECT_NE(window.find("\"name\":\"step 1\""), std::string::npos);
  EXPECT_EQ(window.find("\"name\":\"step 0\""), std::string::npos);
  EXPECT_EQ(Tpusim("run examples/hlo/dot_bf16.hlo --trace " + trace + " --trace-step 1").status, 2);
  EXPECT_EQ(Tpusim("run examples/hlo/dot_bf16.hlo --trace-max-events 0").status, 2);
  std::remove(trace.c_str());
}

TEST(Cli, RunOverTheValueMemoryBudgetIsTimingOnlyWithANote) {
  // ResNet-50's value run would hold ~133 GiB; this budget makes the small dot go timing-only.
  Output o = Tpusim("run examples/hlo/dot_bf16.hlo --value-memory-gib 0.0001");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("note: values are not checked: a value run would hold about"));
  EXPECT_THAT(o.text, HasSubstr("(--value-memory-gib); this run is timing-only"));
  EXPECT_THAT(o.text, Not(HasSubstr("(match)")));
  EXPECT_THAT(o.text, HasSubstr("step breakdown (ms): "));
  EXPECT_EQ(Tpusim("run examples/hlo/dot_bf16.hlo --value-memory-gib -1").status, 2);
}

TEST(Cli, RunTrainingLoopReportsInputBoundSteps) {
  Output o = Tpusim(
      "run examples/hlo/dot_bf16.hlo --timing --steps 20 --steps-per-execution 20 "
      "--infeed-rate 5e6");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("steps: 20 (20 per execution)"));
  EXPECT_THAT(o.text, HasSubstr("top recommendation: Your program is input-bound"));
}

TEST(Cli, RunOnV2UsesItsSingleMxu) {
  Output o = Tpusim("run examples/hlo/dot_bf16.hlo --config v2-8");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("on v2-8 (8 cores)"));
  EXPECT_THAT(o.text, HasSubstr("(match)"));
}

TEST(Cli, RunEveryShippedHloExample) {
  for (const char* name :
       {"mlp_train_step", "conv_bn_relu", "while_loop", "fusion_tiled", "allreduce_replicas"}) {
    Output o = Tpusim(std::string("run examples/hlo/") + name + ".hlo --timing");
    ASSERT_EQ(o.status, 0) << name << ": " << o.text;
    EXPECT_THAT(o.text, HasSubstr("MXU: ")) << name;
    EXPECT_THAT(o.text, HasSubstr("step breakdown (ms): ")) << name;
  }
}

// What JAX printed, before XLA's optimizations (partitioned over the cores) and after (one
// device's program per core): every module runs, and the batch comes from the sharding.
TEST(Cli, RunEveryJaxModule) {
  for (const char* name :
       {"mnist_cnn_b200", "mnist_cnn_dp8_b200", "mlp_dp8_b1024", "lstm_scan_b128",
        "tp_mlp_shardmap8", "collectives_shardmap8", "all_to_all_shardmap8", "mlp_pmap8"}) {
    for (const char* stage : {".pre.hlo", ".opt.hlo"}) {
      const std::string path = std::string("examples/jax/") + name + stage;
      Output o = Tpusim("run " + path + " --timing");
      ASSERT_EQ(o.status, 0) << path << ": " << o.text;
      EXPECT_THAT(o.text, HasSubstr("step breakdown (ms): ")) << path;
    }
  }
  for (const char* stage : {".pre.hlo", ".opt.hlo"}) {
    Output o = Tpusim(std::string("run examples/jax/mlp_dp8_b1024") + stage + " --timing");
    EXPECT_THAT(o.text, HasSubstr("8 partitions, one per core: global batch 1024, 128 per core"))
        << stage;
  }
}

// The programs users run, as JAX printed them (stop 33): flax's ResNet-50 over 8 and a GPT
// under FSDP and on a 2 x 4 mesh. The batch is the tokens' or images' split, and the work is
// what XLA counts (4.30 and 24.3 TFLOP per step): no operand computed whole on every core.
TEST(Cli, RunJaxResNetAndGptStepsAsSharded) {
  Output fsdp = Tpusim("run examples/jax/gpt_fsdp8_b16.pre.hlo --timing");
  ASSERT_EQ(fsdp.status, 0) << fsdp.text;
  EXPECT_THAT(fsdp.text, HasSubstr("8 partitions, one per core: global batch 16, 2 per core"));
  EXPECT_THAT(fsdp.text, HasSubstr(" 4.31 TFLOP per step"));
  Output mesh = Tpusim("run examples/jax/gpt_mesh2x4_b16.pre.hlo --timing");
  ASSERT_EQ(mesh.status, 0) << mesh.text;
  EXPECT_THAT(mesh.text, HasSubstr("global batch 16, 8 per core"));
  Output resnet = Tpusim("run examples/jax/resnet50_bf16_dp8_b1024.pre.hlo --timing");
  ASSERT_EQ(resnet.status, 0) << resnet.text;
  EXPECT_THAT(resnet.text, HasSubstr("global batch 1024, 128 per core"));
  EXPECT_THAT(resnet.text, HasSubstr(" 24.7 TFLOP per step"));
  // XLA's own partitioning names a fusion by every fused op's op_name joined with ':': the
  // screen shows the first and how many more.
  Output opt = Tpusim("run examples/jax/gpt_fsdp8_b16.opt.hlo --timing");
  ASSERT_EQ(opt.status, 0) << opt.text;
  EXPECT_THAT(opt.text, HasSubstr("GptBlock_0/LayerNorm_0/reduce_sum (+67 more) "));
  EXPECT_THAT(opt.text, Not(HasSubstr("reduce_sum:transpose(")));
}

// The JAX op and the user's source line of each HLO op (metadata op_name, stack frames):
// on the one-screen result, in the summary's op profile and its view by framework op, in
// the trace's XLA Ops events and the HTML page.
TEST(Cli, RunNamesTheFrameworkOpsAndTheirSource) {
  const std::string summary = Temp("fw.json"), trace = Temp("fw.trace.json"),
                    html = Temp("fw.html");
  Output o = Tpusim("run examples/jax/mnist_cnn_b200.opt.hlo --timing --summary " + summary +
                    " --trace " + trace + " --html " + html);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("top framework ops: jit(step)/transpose(jvp(MnistCnn))/Conv_1/"
                                "conv_general_dilated 25% (gen.py:94)"));
  EXPECT_THAT(o.text, Not(HasSubstr("batch per core is 0")));  // whole on every core
  const nlohmann::json j = nlohmann::json::parse(Slurp(summary));
  ASSERT_FALSE(j["framework_op_profile"].empty());
  EXPECT_EQ(j["framework_op_profile"][0]["source"], "gen.py:94");
  EXPECT_EQ(j["op_profile"][0]["framework_op"],
            "jit(step)/transpose(jvp(MnistCnn))/Conv_1/conv_general_dilated");
  EXPECT_THAT(Slurp(trace), HasSubstr("\"framework_op\":\"jit(step)/jvp(MnistCnn)/Conv_1/"));
  EXPECT_THAT(Slurp(html), HasSubstr("<table id=framework-ops>"));
  for (const std::string& f : {summary, trace, html}) std::remove(f.c_str());
}

TEST(Cli, CompilePrintsThePartitionedModule) {
  Output o = Tpusim("compile examples/jax/mlp_dp8_b1024.pre.hlo --emit ir");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("num_partitions=8"));
  EXPECT_THAT(o.text, HasSubstr("%x.1 = f32[128,784]"));
  EXPECT_THAT(o.text, HasSubstr(" all-reduce-start("));  // async-collective-creator
  EXPECT_THAT(o.text, Not(HasSubstr("custom-call")));
}

TEST(Cli, RunSaysWhyAModuleIsNotSplitOverTheCores) {
  // The loop's state has no batch dimension: each core runs the whole module, and a rate
  // in examples/s would mean nothing.
  Output o = Tpusim("run examples/hlo/while_loop.hlo --timing");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("not data parallel: no entry parameter has a batch dimension; "
                                "every core runs the whole module\n"));
  EXPECT_THAT(o.text, Not(HasSubstr("examples/s")));
}

TEST(Cli, RunElementwiseModuleMatchesTheEvaluator) {
  Output o = Tpusim("run examples/hlo/elementwise_f32.hlo");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("kernels: 0 MXU, 1 VPU, 0 DMA, 0 collective"));
  EXPECT_THAT(o.text, HasSubstr("(match)"));
}

TEST(Cli, RunReplicaCollectivesMatchTheEvaluator) {
  // all-reduce, a bf16 all-gather of 128-byte parts, reduce-scatter and collective-permute.
  Output o = Tpusim("run examples/hlo/allreduce_replicas.hlo");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("kernels: 0 MXU, 0 VPU, 0 DMA, 4 collective (0 with notes"));
  EXPECT_THAT(o.text, HasSubstr("= 0.00e+00 of the largest |reference| (match)"));
}

TEST(Cli, RunFusionTiledSlicesTheSplitBatchExactly) {
  // A run-time dynamic-slice along the batch split over the cores (the rows all-gathered,
  // then sliced), a copy of the split input and a returned constant with inf and NaN.
  Output o = Tpusim("run examples/hlo/fusion_tiled.hlo");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  EXPECT_THAT(o.text, HasSubstr("= 0.00e+00 of the largest |reference| (match)"));
}

TEST(Cli, RunConvBnReluComputesWholeBatchStatistics) {
  // One image per core: a bf16 convolution rounded on the VPU, and batch norm expanded by the
  // partitioner, its sums and sums of squares all-reduced over the cores (in one ring) before
  // the statistics. The convolution sums its output as it drains (a multi-output fusion),
  // the normalize and ReLU are one loop fusion (3 VPU kernels; 9 before they fused).
  Output o = Tpusim("run examples/hlo/conv_bn_relu.hlo");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  EXPECT_THAT(o.text, HasSubstr("kernels: 1 MXU, 3 VPU, 0 DMA, 1 collective"));
  EXPECT_THAT(o.text, HasSubstr("(match)"));
}

TEST(Cli, RunSplitMlpTrainStepMatchesTheEvaluator) {
  // 4 rows per core: dots split along M and K, tiled bias adds and reductions over the
  // batch, and the all-reduces of the gradients and the loss, all computing values.
  Output o = Tpusim("run examples/hlo/mlp_train_step.hlo");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  EXPECT_THAT(o.text, HasSubstr("global batch 32 split over 8 cores (4 per core)"));
  EXPECT_THAT(o.text, HasSubstr("(match)"));
}

TEST(Cli, RunMlpTrainingStepChecksEveryOutputAgainstTheEvaluator) {
  // Replicated f32 dots, reductions, broadcasts, an iota compared with s32 labels and the
  // tuple all-reduce of the loss and gradients all compute exact values. The new weights
  // are written over the old ones (donation), so three steps train; each step is checked
  // against the evaluator run from the simulated state of the step before, and the loss
  // went down.
  Output o = Tpusim("run examples/models/mlp.hlo --steps 3");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  std::smatch m;
  const std::regex loss(
      "training: 6 outputs update their parameters in place; output 0 \\(the loss\\) "
      "([0-9.]+) at step 1 -> ([0-9.]+) at step 3 \\(simulated\\)");
  ASSERT_TRUE(std::regex_search(o.text, m, loss)) << o.text;
  EXPECT_LT(std::stod(m[2]), std::stod(m[1]) - 0.005);  // SGD at lr 0.01 on random labels
  double previous = 1e9;
  for (int step = 1; step <= 3; ++step) {
    const std::string from =
        step == 1 ? "" : " \\(from the simulated step " + std::to_string(step - 1) + "\\)";
    const std::regex line("values: step " + std::to_string(step) + from +
                          ": loss ([0-9.]+) \\(reference ([0-9.]+)\\), max [^\\n]*\\(match\\)");
    ASSERT_TRUE(std::regex_search(o.text, m, line)) << step << "\n" << o.text;
    EXPECT_EQ(m[1], m[2]) << "step " << step;
    EXPECT_LT(std::stod(m[1]), previous) << "step " << step;
    previous = std::stod(m[1]);
  }
}

TEST(Cli, RunMnistCnnTrainingWithValuesLowersTheLoss) {
  // The TPU guide's CNN with Adam at global batch 8 (one example per core): convolutions and
  // their gradients, the 147456x256 dense layer, bias+ReLU fusions, the tuple all-reduce and
  // Adam's update over 38.4 M parameters all compute values. Adam's state starts at zero.
  const std::string path = Temp("mnist8.hlo");
  ASSERT_EQ(Tpusim("model mnist-cnn --train --batch 8 -o " + path).status, 0);
  Output o = Tpusim("run " + path + " --steps 2");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  EXPECT_THAT(o.text, HasSubstr("values: step 2 (from the simulated step 1): loss "));
  EXPECT_THAT(o.text, Not(HasSubstr("MISMATCH")));
  std::smatch m;
  const std::regex loss(
      "training: 31 outputs update their parameters in place; output 0 \\(the loss\\) "
      "([0-9.e+-]+) at step 1 -> ([0-9.e+-]+) at step 2 \\(simulated\\)");
  std::remove(path.c_str());
  ASSERT_TRUE(std::regex_search(o.text, m, loss)) << o.text;
  EXPECT_LT(std::stod(m[2]), 0.5 * std::stod(m[1]));
}

TEST(Cli, RunTransformerLayerTrainingStepMatchesTheEvaluator) {
  // One BERT encoder layer's training step at global batch 32: attention's batched dots,
  // softmax, layer norms, GELU, the 19-operand gradient all-reduce and Adam. Before the
  // collectives' entry handshake a ring predecessor could write into a core still running
  // the kernel before the all-reduce, and the loss and the first gradient came out wrong.
  const std::string path = Temp("tl32.hlo");
  ASSERT_EQ(Tpusim("model transformer-layer --train --batch 32 -o " + path).status, 0);
  Output o = Tpusim("run " + path);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  EXPECT_THAT(o.text, HasSubstr("(match)"));
  std::remove(path.c_str());
}

TEST(Cli, RunOfAModuleWithADynamicLoopIsOneClearLine) {
  std::string text = Slurp("examples/hlo/while_loop.hlo");
  const size_t cfg = text.find(", backend_config");
  text.erase(cfg, text.find("}}", cfg) + 2 - cfg);
  const std::string limit = "%limit = s32[] constant(10)";
  text.replace(text.find(limit), limit.size(),
               "%limit = s32[] get-tuple-element((s32[], f32[16,16]{1,0}) %state), index=0");
  const std::string path = Temp("dyn.hlo");
  std::ofstream(path) << text;
  Output o = Tpusim("run " + path + " --timing");
  EXPECT_EQ(o.status, 1);
  EXPECT_THAT(o.text, HasSubstr("%while (while): the trip count is not static"));
  EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
  std::remove(path.c_str());
}

TEST(Cli, BadInputsAreOneLineErrorsWithNonZeroStatus) {
  Output o = Tpusim("exec");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("missing PROGRAM.s"));
  o = Tpusim("frobnicate");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("unknown command 'frobnicate'"));
  o = Tpusim("exec /nonexistent.s");
  EXPECT_EQ(o.status, 1);
  EXPECT_THAT(o.text, HasSubstr("cannot open '/nonexistent.s'"));
  o = Tpusim("exec examples/kernels/matmul_db.s --config /nonexistent.json");
  EXPECT_EQ(o.status, 1);
  EXPECT_THAT(o.text, HasSubstr("cannot open config file"));
  o = Tpusim("run examples/hlo/dot_bf16.hlo --bogus");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("unrecognised option '--bogus'"));
  // A directory, a file that is not text (said "unexpected end of input" before).
  o = Tpusim("run examples/hlo");
  EXPECT_EQ(o.status, 1);
  EXPECT_THAT(o.text, HasSubstr("tpusim run: 'examples/hlo' is a directory, not a file"));
  const std::string binary = Temp("binary.hlo");
  std::ofstream(binary, std::ios::binary) << std::string("HloModule m\0\x01\x02", 14);
  o = Tpusim("run " + binary);
  EXPECT_EQ(o.status, 1);
  EXPECT_THAT(o.text, HasSubstr("is not a text file (byte 11 is NUL)"));
  std::remove(binary.c_str());
}

// A chain of 200,000 elementwise ops (the VPU body builder recurses once per op) compiled
// and run on the command's own 4 GiB stack; 200,000 died with SIGSEGV on the 8 MiB main one.
TEST(Cli, ADeepChainOfOpsCompilesAndRuns) {
  const std::string path = Temp("deep.hlo");
  {
    std::ofstream out(path);
    out << "HloModule deep\nENTRY main {\n  a0 = f32[128] parameter(0)\n";
    for (int i = 1; i <= 200000; ++i) out << "  a" << i << " = f32[128] negate(a" << i - 1 << ")\n";
    out << "}\n";
  }
  Output o = Tpusim("run " + path + " --timing");
  EXPECT_EQ(o.status, 0) << o.text.substr(0, 2000);
  EXPECT_THAT(o.text, HasSubstr("kernels: 0 MXU, 1 VPU, 0 DMA, 0 collective"));
  std::remove(path.c_str());
}

TEST(Cli, CompileEmitsOptimizedHloAndIsa) {
  Output o = Tpusim("compile examples/hlo/mlp_train_step.hlo");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("HloModule"));
  EXPECT_THAT(o.text, HasSubstr("T(8,128)"));  // layout assignment ran
  o = Tpusim("compile examples/hlo/dot_bf16.hlo --emit isa");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("mxu.mm m0"));
  EXPECT_THAT(o.text, HasSubstr(".tag \"dot.3\""));
  o = Tpusim("compile examples/hlo/dot_bf16.hlo --emit asm");
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("--emit must be ir or isa"));
}

// Kernel windows are on by default; --no-kernel-windows drains every kernel before the next
// one issues, and the step takes longer (mlp_train_step: 0.2157 -> 0.2175 ms at stop 37).
TEST(Cli, NoKernelWindowsDrainsEachKernelAloneAndTakesLonger) {
  const std::string m = "examples/hlo/mlp_train_step.hlo";
  Output on = Tpusim("compile " + m + " --emit isa");
  Output off = Tpusim("compile " + m + " --emit isa --no-kernel-windows");
  ASSERT_EQ(on.status, 0) << on.text;
  ASSERT_EQ(off.status, 0) << off.text;
  EXPECT_THAT(on.text, HasSubstr("    window 1, "));
  EXPECT_THAT(off.text, Not(HasSubstr("window")));
  auto step_ms = [](const std::string& text) {
    const size_t at = text.find("step time: ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + 11));
  };
  const double with = step_ms(Tpusim("run " + m + " --timing").text);
  const double without = step_ms(Tpusim("run " + m + " --timing --no-kernel-windows").text);
  EXPECT_GT(with, 0);
  EXPECT_GT(without, with);
}

TEST(Cli, AssemblyErrorsNameFileLineAndColumn) {
  std::string path = Temp("bad.s");
  std::ofstream(path) << "li r1, 0\nadd r1, r2, v3\nhalt\n";
  Output o = Tpusim("exec " + path);
  EXPECT_EQ(o.status, 1);
  EXPECT_THAT(o.text, HasSubstr(path + ":2:"));
  std::remove(path.c_str());
}

}  // namespace
TEST(Cli, ModelListMatchesGolden) {
  Output o = Tpusim("model --list");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_EQ(o.text, Slurp("test/cli/golden/model_list.txt"));
}

TEST(Cli, ModelWritesAModuleThatRuns) {
  const std::string path = Temp("mlp.hlo");
  Output o = Tpusim("model mlp --train --batch 64 -o " + path);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("training step, sgd, 8 replicas x batch 8"));
  Output run = Tpusim("run " + path + " --timing");
  ASSERT_EQ(run.status, 0) << run.text;
  EXPECT_THAT(run.text, HasSubstr("8 replicas, one per core, batch 8 per core"));
  EXPECT_THAT(run.text, HasSubstr("1 collective"));
  std::remove(path.c_str());
}

TEST(Cli, ModelUnknownNameIsOneLineWithTheChoices) {
  Output o = Tpusim("model nope -o " + Temp("x.hlo"));
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.text, HasSubstr("unknown model 'nope' (one of mnist-cnn, mlp,"));
  EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
}

TEST(Cli, RunModelWritesEveryProfilerOutput) {
  std::string trace = Temp("m.trace.json"), summary = Temp("m.summary.json"), html = Temp("m.html");
  Output o = Tpusim("run examples/models/mlp.hlo --timing --monitor --trace " + trace +
                    " --summary " + summary + " --html " + html);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, HasSubstr("Utilization of TPU Matrix Units (higher is better): "));
  EXPECT_THAT(traces::ValidateChromeTraceFile(trace), ::testing::IsEmpty());
  EXPECT_THAT(Slurp(summary), HasSubstr("\"step_breakdown_ms\""));
  EXPECT_THAT(Slurp(html), HasSubstr("<html"));
  for (const std::string& f : {trace, summary, html}) std::remove(f.c_str());
}

}  // namespace tpusim::cli
