// The pass pipeline: runs passes in order, verifies the module after every pass that
// changed it (stopping with an error that names the pass), times each pass, and can dump
// the IR after each pass. The compiler's own pipeline is compiler/hlo_pipeline.h.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/passes/pass.h"

namespace tpusim::passes {

struct PassLogEntry {
  std::string name;
  bool changed = false;
  double ms = 0;  // wall time of the pass, verifier excluded
};

class PassPipeline {
 public:
  explicit PassPipeline(std::string name = "tpusim") : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  HloPass& AddPass(std::unique_ptr<HloPass> pass);
  template <typename T, typename... Args>
  T& AddPass(Args&&... args) {
    return static_cast<T&>(AddPass(std::make_unique<T>(std::forward<Args>(args)...)));
  }
  const std::vector<std::unique_ptr<HloPass>>& passes() const { return passes_; }

  // Writes DIR/00-input.hlo and DIR/NN-<pass>.hlo after pass NN (from 01), each atomically
  // (a temporary file renamed into place). Empty: no dumps.
  void set_dump_dir(std::string dir) { dump_dir_ = std::move(dir); }

  // Verifies the input, then runs every pass. true if any pass changed the module.
  hlo::Result<bool> Run(hlo::HloModule& module);
  // One entry per pass run by the last Run (the failing pass included).
  const std::vector<PassLogEntry>& log() const { return log_; }

 private:
  hlo::Status Dump(const hlo::HloModule& module, int index, std::string_view pass) const;

  std::string name_;
  std::vector<std::unique_ptr<HloPass>> passes_;
  std::string dump_dir_;
  std::vector<PassLogEntry> log_;
};

}  // namespace tpusim::passes
