// The pass pipeline; see pipeline.h.
#include "compiler/passes/pipeline.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"

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

}  // namespace tpusim::passes
