#include "compiler/compile.h"

#include <chrono>
#include <map>
#include <sstream>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"

namespace tpusim {
namespace {

std::map<std::string, std::shared_ptr<const CompiledModule>>& Cache() {
  static std::map<std::string, std::shared_ptr<const CompiledModule>> cache;
  return cache;
}
int compilations = 0;

std::string CacheKey(const std::string& text, const CompileTarget& t) {
  std::ostringstream k;
  k << t.lowering.cores << '/' << t.lowering.mxus_per_core << '/' << t.lowering.infeed << '/'
    << t.lowering.rng_seed << '/' << t.lowering.kernel_windows << '/' << t.hbm_bytes_per_core
    << '/';
  for (int c : t.lowering.ring) k << c << ',';
  k << '\n' << text;
  return k.str();
}

}  // namespace

CompileOptions CompileOptionsFor(const CompileTarget& target) {
  CompileOptions options;
  options.hbm_capacity_bytes = target.hbm_bytes_per_core;
  options.dump_dir = target.dump_dir;
  options.devices = target.lowering.cores;
  options.ring_costs = lowering::RingCostsOf(target.lowering);
  return options;
}

hlo::Result<std::shared_ptr<const CompiledModule>> CompileForBoard(const std::string& hlo_text,
                                                                   const std::string& name,
                                                                   const CompileTarget& target) {
  const std::string key = CacheKey(hlo_text, target);
  if (auto it = Cache().find(key);
      it != Cache().end() && target.dump_dir.empty() && target.use_cache)
    return it->second;
  const auto start = std::chrono::steady_clock::now();
  auto parsed = hlo::ParseHlo(hlo_text, name);
  if (!parsed.ok()) return parsed.status();
  if (auto st = hlo::VerifyModule(parsed.value()); !st.ok()) return st;
  auto optimized = hlo::ParseHlo(hlo_text, name);
  auto result = std::make_shared<CompiledModule>();
  result->original = std::move(parsed.value());
  result->optimized = std::move(optimized.value());
  const CompileOptions options = CompileOptionsFor(target);
  auto report = CompileToHlo(result->optimized, options);
  if (!report.ok()) return report.status();
  result->report = std::move(report.value());
  auto lowered = lowering::LowerModule(result->optimized, result->report.memory, target.lowering);
  if (!lowered.ok()) return lowered.status();
  result->lowered = std::move(lowered.value());
  result->compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ++compilations;
  std::shared_ptr<const CompiledModule> shared = std::move(result);
  if (target.use_cache) Cache()[key] = shared;
  return shared;
}

int CompilationCount() { return compilations; }

}  // namespace tpusim
