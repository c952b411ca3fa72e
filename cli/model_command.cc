// tpusim model NAME: write a model's training step (or forward pass) as an XLA HLO module.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "compiler/model/models.h"
#include "traces/atomic_file.h"

namespace tpusim::cli {
namespace po = boost::program_options;

namespace {

int ListModels() {
  std::printf("%-18s %13s %-9s %s\n", "model", "global batch", "optimizer", "description");
  for (const model::ModelSpec& m : model::Models()) {
    std::printf("%-18s %13lld %-9s %s\n", m.name.c_str(), static_cast<long long>(m.default_batch),
                model::OptimizerName(m.default_optimizer).c_str(), m.description.c_str());
  }
  return 0;
}

model::Optimizer ParseOptimizer(const std::string& name) {
  for (model::Optimizer o :
       {model::Optimizer::kSgd, model::Optimizer::kMomentum, model::Optimizer::kAdam}) {
    if (model::OptimizerName(o) == name) return o;
  }
  throw CliError("--optimizer must be sgd, momentum or adam, not '" + name + "'", 2);
}

}  // namespace

int ModelCommand(const std::vector<std::string>& argv) {
  std::string name, out_path, dtype = "f32", optimizer;
  int64_t batch = 0, replicas = 8;  // the v3-8 board's cores
  po::options_description opts(
      "usage: tpusim model NAME [options] [-o FILE.hlo]\n"
      "Writes a model's data-parallel training step (--train) or forward pass as an XLA HLO\n"
      "module, one program per replica (docs/models.md). tpusim model --list shows the models.\n"
      "example: tpusim model mnist-cnn --train -o out/mnist-cnn.hlo\n\n"
      "options");
  opts.add_options()("help,h", "show this help")("list", "list the models and default batches")(
      "batch", po::value(&batch), "global batch (default: the model's); divides over replicas")(
      "train", "the whole training step: loss, gradients, all-reduce, optimizer update")(
      "dtype", po::value(&dtype), "f32 (default) or bf16 (bf16 activations, f32 master weights)")(
      "optimizer", po::value(&optimizer), "sgd, momentum or adam (default: the model's)")(
      "replicas", po::value(&replicas), "replica_count of the module (default 8)")(
      "output,o", po::value(&out_path), "write the module to FILE (default: standard output)");
  po::variables_map vm;
  if (!ParseCommandLine(argv, opts, "model", &name, &vm)) return 0;
  if (vm.count("list")) return ListModels();
  if (name.empty()) throw CliError("missing model NAME (one of " + model::ModelNames() + ")", 2);
  const model::ModelSpec* spec = model::FindModel(name);
  if (!spec) throw CliError("unknown model '" + name + "' (one of " + model::ModelNames() + ")", 2);
  if (dtype != "f32" && dtype != "bf16") {
    throw CliError("--dtype must be f32 or bf16, not '" + dtype + "'", 2);
  }
  if (vm.count("batch") && batch < 1) throw CliError("--batch must be at least 1", 2);
  if (replicas < 1) throw CliError("--replicas must be at least 1", 2);

  model::ModelOptions options{
      .global_batch = batch,
      .replicas = replicas,
      .dtype = dtype == "bf16" ? hlo::PrimitiveType::kBF16 : hlo::PrimitiveType::kF32,
      .optimizer = std::nullopt,
      .train = vm.count("train") > 0};
  if (!optimizer.empty()) options.optimizer = ParseOptimizer(optimizer);
  const auto start = std::chrono::steady_clock::now();
  model::BuiltModel built;
  try {
    built = model::BuildModel(*spec, options);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what(), 2);
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (out_path.empty()) {
    std::cout << built.hlo;
    return 0;
  }
  if (std::string err = traces::WriteFileAtomic(out_path, built.hlo); !err.empty()) {
    throw CliError(err);
  }
  const double gflops = built.stats.flops_per_replica * double(replicas) / 1e9;
  std::printf(
      "%s: %s, %lld replicas x batch %lld, %.1fM parameters, %.1f GFLOP per step (dots and "
      "convolutions, all replicas), %lld instructions, %zu bytes, built in %.0f ms\n",
      out_path.c_str(),
      options.train ? ("training step, " + model::OptimizerName(built.optimizer)).c_str()
                    : "forward pass",
      static_cast<long long>(replicas), static_cast<long long>(built.per_replica_batch),
      double(built.stats.parameters) / 1e6, gflops,
      static_cast<long long>(built.stats.instructions), built.hlo.size(), ms);
  return 0;
}

namespace {
const bool kRegistered = RegisterCommand(
    {"model", "write a model's training step (or forward pass) as HLO", ModelCommand, 40});
}  // namespace

}  // namespace tpusim::cli
