// The pass pipeline, the default pipeline and CompileToHlo; see pipeline.h.
#include "compiler/passes/pipeline.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/algsimp.h"
#include "compiler/passes/all_reduce_combiner.h"
#include "compiler/passes/async_conversion.h"
#include "compiler/passes/contraction_defusion.h"
#include "compiler/passes/conv_canon.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/fusion.h"
#include "compiler/spmd/batch_sharding.h"
#include "compiler/spmd/spmd_partitioner.h"

namespace tpusim::passes {

using hlo::Status;

HloPass& PassPipeline::AddPass(std::unique_ptr<HloPass> pass) {
  passes_.push_back(std::move(pass));
  return *passes_.back();
}

Status PassPipeline::Dump(const hlo::HloModule& module, int index, std::string_view pass) const {
  if (dump_dir_.empty()) return Status::Ok();
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dump_dir_, ec);
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%02d-", index);
  fs::path path = fs::path(dump_dir_) / (prefix + std::string(pass) + ".hlo");
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << hlo::PrintModule(module);
    if (!out.flush()) return Status::Error("cannot write IR dump " + tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) return Status::Error("cannot write IR dump " + path.string() + ": " + ec.message());
  return Status::Ok();
}

hlo::Result<bool> PassPipeline::Run(hlo::HloModule& module) {
  log_.clear();
  if (Status s = hlo::VerifyModule(module); !s.ok()) {
    return Status::Error("pipeline '" + name_ + "': invalid input module: " + s.message());
  }
  if (Status s = Dump(module, 0, "input"); !s.ok()) return s;
  bool changed = false;
  int index = 0;
  for (const auto& pass : passes_) {
    ++index;
    auto t0 = std::chrono::steady_clock::now();
    hlo::Result<bool> r = pass->Run(module);
    std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
    log_.push_back({std::string(pass->name()), r.ok() && *r, ms.count()});
    if (!r.ok()) {
      return Status::Error("pass '" + std::string(pass->name()) +
                           "' failed: " + r.status().message());
    }
    if (*r) {
      changed = true;
      if (Status s = hlo::VerifyModule(module); !s.ok()) {
        return Status::Error("verifier failed after pass '" + std::string(pass->name()) +
                             "': " + s.message());
      }
    }
    if (Status s = Dump(module, index, pass->name()); !s.ok()) return s;
  }
  return changed;
}

PassPipeline DefaultPipeline(const CompileOptions& options) {
  PassPipeline p("default");
  p.AddPass<spmd::BatchShardingPass>(options.devices);
  p.AddPass<spmd::SpmdPartitionerPass>(options.devices);
  p.AddPass<AsyncConversionPass>();
  p.AddPass<AllReduceCombinerPass>(options.all_reduce_combine_bytes);
  p.AddPass<ContractionDefusionPass>();
  p.AddPass<DcePass>();
  p.AddPass<AlgebraicSimplifierPass>();
  p.AddPass<DcePass>();
  p.AddPass<ConvCanonicalizationPass>();
  p.AddPass<LayoutAssignmentPass>();
  p.AddPass<ElementwiseFusionPass>();
  p.AddPass<DcePass>();
  p.AddPass<MemoryPlanningPass>(options.hbm_capacity_bytes);
  p.set_dump_dir(options.dump_dir);
  return p;
}

hlo::Result<CompileReport> CompileToHlo(hlo::HloModule& module, const CompileOptions& options) {
  PassPipeline pipeline = DefaultPipeline(options);
  hlo::Result<bool> r = pipeline.Run(module);
  if (!r.ok()) return r.status();
  CompileReport report;
  report.hlo = hlo::PrintModule(module);
  report.padding = ComputePaddingReport(module);  // the ops as they will run
  for (const auto& pass : pipeline.passes()) {
    if (auto* memory = dynamic_cast<const MemoryPlanningPass*>(pass.get())) {
      report.memory = memory->plan();
    }
  }
  report.peak_hbm_bytes = report.memory.peak_bytes;
  report.passes = pipeline.log();
  return report;
}

}  // namespace tpusim::passes
