#include "compiler/hlo_pipeline.h"

#include "compiler/hlo/printer.h"
#include "compiler/lowering/driver/tensor_core_target.h"
#include "compiler/passes/algsimp.h"
#include "compiler/passes/async_collectives.h"
#include "compiler/passes/async_conversion.h"
#include "compiler/passes/bf16_folding.h"
#include "compiler/passes/contraction_defusion.h"
#include "compiler/passes/conv_canon/conv_canon.h"
#include "compiler/passes/conv_canon/space_to_depth.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/fusion/bn_fusion.h"
#include "compiler/passes/fusion/conv_stats_fusion.h"
#include "compiler/passes/fusion/fusion.h"
#include "compiler/passes/fusion/fusion_merger.h"
#include "compiler/passes/fusion/multi_output_fusion.h"
#include "compiler/passes/memory_scheduler.h"
#include "compiler/passes/rematerialization.h"
#include "compiler/passes/transposed_dot.h"
#include "compiler/spmd/batch_sharding.h"
#include "compiler/spmd/spmd_partitioner.h"

namespace tpusim {

passes::PassPipeline DefaultPipeline(const CompileOptions& options) {
  passes::PassPipeline p("default");
  p.AddPass<spmd::BatchShardingPass>(options.devices);
  p.AddPass<spmd::SpmdPartitionerPass>(options.devices);
  p.AddPass<passes::AsyncConversionPass>();
  p.AddPass<passes::TransposedDotPass>();
  p.AddPass<passes::AllReduceCombinerPass>(options.all_reduce_combine_bytes);
  const target::TargetDescription& kernels =
      options.target ? *options.target : lowering::TensorCoreTarget();
  p.AddPass<passes::ContractionDefusionPass>();
  p.AddPass<passes::DcePass>();
  p.AddPass<passes::AlgebraicSimplifierPass>(&kernels);
  p.AddPass<passes::DcePass>();
  p.AddPass<passes::SpaceToDepthPass>(kernels);
  p.AddPass<passes::ConvCanonicalizationPass>(kernels);
  p.AddPass<passes::Bf16ConversionFoldingPass>(kernels);
  p.AddPass<passes::DcePass>();  // the converts the folding bypassed: fusion counts users
  p.AddPass<passes::LayoutAssignmentPass>();
  p.AddPass<passes::ElementwiseFusionPass>(&kernels);
  p.AddPass<passes::BatchNormFusionPass>(kernels);
  p.AddPass<passes::FusionMergerPass>(kernels);
  p.AddPass<passes::MultiOutputFusionPass>(kernels);
  // again: a multi-output fusion reads its siblings' operands, so more producers copy in
  p.AddPass<passes::FusionMergerPass>(kernels);
  p.AddPass<passes::ConvStatisticsFusionPass>(kernels);
  p.AddPass<passes::DcePass>();
  p.AddPass<passes::MemorySchedulerPass>();
  p.AddPass<passes::RematerializationPass>(options.hbm_capacity_bytes);
  if (options.async_collectives)
    p.AddPass<passes::AsyncCollectiveCreatorPass>(options.hbm_capacity_bytes, options.ring_costs);
  p.AddPass<passes::MemoryPlanningPass>(options.hbm_capacity_bytes);
  p.set_dump_dir(options.dump_dir);
  return p;
}

hlo::Result<CompileReport> CompileToHlo(hlo::HloModule& module, const CompileOptions& options) {
  passes::PassPipeline pipeline = DefaultPipeline(options);
  hlo::Result<bool> r = pipeline.Run(module);
  if (!r.ok()) {
    // Out of memory after rematerialization tried (it plans only a module over capacity):
    // say what it could do, as XLA's "Can't reduce memory use below ..." does.
    for (const auto& pass : pipeline.passes())
      if (auto* remat = dynamic_cast<const passes::RematerializationPass*>(pass.get());
          remat && remat->peak_before() > 0 &&
          r.status().message().find("RESOURCE_EXHAUSTED") != std::string::npos) {
        std::string note = remat->recomputed().empty()
                               ? "Rematerialization found no value to recompute where the most "
                                 "bytes are live (only cheap ops whose operands stay live there "
                                 "qualify)."
                               : "Rematerialization recomputed " +
                                     std::to_string(remat->recomputed().size()) +
                                     " values and reduced the plan only to " +
                                     passes::HumanBytes(remat->peak_after()) + ", from " +
                                     passes::HumanBytes(remat->peak_before()) + ".";
        return hlo::Status::Error(r.status().message() + "\n" + note + "\n");
      }
    return r.status();
  }
  CompileReport report;
  report.hlo = hlo::PrintModule(module);
  report.padding = passes::ComputePaddingReport(module);  // the ops as they will run
  for (const auto& pass : pipeline.passes()) {
    if (auto* memory = dynamic_cast<const passes::MemoryPlanningPass*>(pass.get())) {
      report.memory = memory->plan();
    }
    if (auto* remat = dynamic_cast<const passes::RematerializationPass*>(pass.get());
        remat && !remat->recomputed().empty()) {
      report.recomputed = remat->recomputed();
      report.peak_before_recomputing = remat->peak_before();
    }
  }
  report.peak_hbm_bytes = report.memory.peak_bytes;
  report.passes = pipeline.log();
  return report;
}

}  // namespace tpusim
