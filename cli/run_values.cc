#include "cli/run_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "compiler/eval/evaluator.h"
#include "compiler/hlo/alias.h"
#include "isa/bf16.h"

namespace tpusim::cli {
namespace {

// Elements [first, first + count) of `v` in the element type of its shape, as bytes.
std::vector<uint8_t> Encode(const eval::Value& v, int64_t first, int64_t count) {
  const bool bf16 = v.shape.type == hlo::PrimitiveType::kBF16;
  std::vector<uint8_t> out(static_cast<size_t>(count) * (bf16 ? 2 : 4));
  for (int64_t i = 0; i < count; ++i) {
    const double x = v.data[static_cast<size_t>(first + i)];
    const float f = static_cast<float>(x);
    if (bf16) {
      const uint16_t b = isa::F32ToBf16(f);
      std::copy_n(reinterpret_cast<const uint8_t*>(&b), 2, out.data() + 2 * i);
    } else if (v.shape.type == hlo::PrimitiveType::kS32) {  // integers as their bits
      const int32_t n = static_cast<int32_t>(x);
      std::copy_n(reinterpret_cast<const uint8_t*>(&n), 4, out.data() + 4 * i);
    } else {
      std::copy_n(reinterpret_cast<const uint8_t*>(&f), 4, out.data() + 4 * i);
    }
  }
  return out;
}

// Optimizer state as `tpusim model` names its parameters (compiler/model/optimizer.cc):
// momentum, Adam's moments and step count.
bool IsOptimizerState(const std::string& parameter_name) {
  const std::string name = parameter_name.substr(0, parameter_name.rfind('.'));  // no ".ID"
  for (const char* suffix : {"_momentum", "_adam_m", "_adam_v"})
    if (name.size() > std::strlen(suffix) && name.ends_with(suffix)) return true;
  return name == "adam_step";
}

// Element i of `bytes` holding elements of `type` as Encode writes them.
double Decode(hlo::PrimitiveType type, const uint8_t* bytes, int64_t i) {
  if (type == hlo::PrimitiveType::kBF16) {
    uint16_t b;
    std::copy_n(bytes + 2 * i, 2, reinterpret_cast<uint8_t*>(&b));
    return isa::Bf16ToF32(b);
  }
  if (type == hlo::PrimitiveType::kS32) {
    int32_t n;
    std::copy_n(bytes + 4 * i, 4, reinterpret_cast<uint8_t*>(&n));
    return n;
  }
  float f;
  std::copy_n(bytes + 4 * i, 4, reinterpret_cast<uint8_t*>(&f));
  return f;
}

// |got - want|, where a NaN or infinity matches only its like (a NaN would drop out of max).
double Difference(double got, double want) {
  if (std::isnan(got) || std::isnan(want))
    return std::isnan(got) && std::isnan(want) ? 0 : std::numeric_limits<double>::infinity();
  if (std::isinf(got) || std::isinf(want))
    return got == want ? 0 : std::numeric_limits<double>::infinity();
  return std::fabs(got - want);
}

// Seeded synthetic data a training step can learn from: floats uniform in [-1, 1) scaled
// like LeCun initialisation (by 1 / sqrt(fan-in) for rank >= 2, fan-in = every dimension
// but the last), so activations and the loss stay of order one; integers (labels, token
// ids) small and non-negative, in [0, 8) (a class index below every shipped model's count);
// optimizer state zero, as at the start of training (a random second moment has no root).
eval::Value SyntheticInput(const hlo::HloInstruction& p, uint64_t seed) {
  if (IsOptimizerState(p.name())) return eval::Value::Zeros(p.shape());
  eval::Value v = eval::Value::Random(p.shape(), seed);
  const hlo::Shape& s = p.shape();
  if (s.IsArray() && s.type == hlo::PrimitiveType::kS32)
    for (double& x : v.data) x = std::fmod(x, 8.0);
  if (!s.IsArray() || !hlo::IsFloatingType(s.type) || s.rank() < 2) return v;
  const double fan_in = static_cast<double>(s.ElementCount() / std::max<int64_t>(1, s.dims.back()));
  const double scale = 1.0 / std::sqrt(std::max(1.0, fan_in));
  for (double& x : v.data) x = eval::RoundTo(s.type, x * scale);
  return v;
}

}  // namespace

std::vector<eval::Value> LoadInputs(sim::Simulation& sim, const CompiledModule& compiled,
                                    uint64_t seed) {
  const lowering::LoweredModule& low = compiled.lowered;
  std::vector<eval::Value> args;
  for (const hlo::HloInstruction* p : compiled.original.entry()->parameters())
    args.push_back(SyntheticInput(*p, seed + args.size()));
  const int cores = static_cast<int>(low.programs.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const hlo::HloInstruction* p = compiled.original.entry()->parameters()[i];
    const passes::BufferInfo* buf = compiled.report.memory.Find(p->name());
    if (!buf || !p->shape().IsArray()) continue;
    const bool split = low.data_parallel && std::count(low.batch_parameters.begin(),
                                                       low.batch_parameters.end(), p->name());
    const int64_t n = p->shape().ElementCount(), share = split ? n / cores : n;
    std::vector<uint8_t> bytes;  // a replicated argument is encoded once for every core
    for (int c = 0; c < cores; ++c) {
      if (split || c == 0) bytes = Encode(args[i], split ? c * share : 0, share);
      sim.core(c).hbm().Write(static_cast<uint64_t>(buf->offset), bytes.data(), bytes.size());
    }
  }
  return args;
}

namespace {

// Pairs (output index, argument index) of outputs the compiled program writes over their
// parameter's buffer: exactly the donations memory planning honoured (same address).
std::vector<std::pair<size_t, size_t>> FedBack(const CompiledModule& compiled) {
  std::vector<std::pair<size_t, size_t>> out;
  auto aliases = hlo::ParseInputOutputAlias(compiled.original.input_output_alias);
  if (!aliases.ok()) return out;
  const auto params = compiled.original.entry()->parameters();
  const auto& outputs = compiled.lowered.outputs;
  for (const hlo::InputOutputAlias& a : *aliases) {
    if (a.output_index.size() != 1 || !a.parameter_index.empty()) continue;
    const auto k = static_cast<size_t>(a.output_index[0]);
    for (size_t i = 0; i < params.size(); ++i) {
      const passes::BufferInfo* buf = compiled.report.memory.Find(params[i]->name());
      if (params[i]->parameter_number() == a.parameter && buf && k < outputs.size() &&
          outputs[k].address == static_cast<uint64_t>(buf->offset))
        out.push_back({k, i});
    }
  }
  return out;
}

}  // namespace

ValueCheck CompareWithEvaluator(sim::Simulation& sim, const CompiledModule& compiled,
                                std::vector<eval::Value> args, int steps) {
  const lowering::LoweredModule& low = compiled.lowered;
  const int cores = static_cast<int>(low.programs.size());
  // A replicated module: replica i runs on core i with the same inputs (LoadInputs).
  const int replicas = low.data_parallel ? 1 : std::min(low.replicas, cores);
  const auto fed_back = FedBack(compiled);
  ValueCheck check;
  check.fed_back = static_cast<int>(fed_back.size());
  // Every replica gets the same inputs (LoadInputs), so one mirrored interpreter stands for
  // all of them unless some op tells them apart (reduce-scatter, rng, ...).
  const bool mirrored = replicas > 1 && !eval::MirrorObstacle(compiled.original, replicas);
  const size_t evaluated = mirrored ? 1 : static_cast<size_t>(replicas);
  std::vector<std::vector<eval::Value>> inputs(evaluated - 1, args);
  inputs.push_back(std::move(args));
  std::vector<std::vector<eval::Value>> refs;
  for (int step = 0; step < steps; ++step) {
    if (step > 0 && fed_back.empty()) break;  // every step computes the same
    for (size_t r = 0; r < refs.size(); ++r)
      for (auto [k, i] : fed_back) inputs[r][i] = std::move(refs[r][k]);
    refs.clear();
    if (evaluated > 1) {
      auto ref = eval::EvaluateReplicated(compiled.original, inputs);
      if (!ref.ok()) throw CliError("reference evaluator: " + ref.status().message());
      refs = std::move(ref.value());
    } else {
      auto ref = mirrored ? eval::EvaluateMirrored(compiled.original, inputs[0], replicas)
                          : eval::Evaluate(compiled.original, inputs[0]);
      if (!ref.ok()) throw CliError("reference evaluator: " + ref.status().message());
      refs.push_back(std::move(ref.value()));
    }
    if (!refs[0].empty() && refs[0][0].shape.IsArray() && refs[0][0].shape.rank() == 0)
      check.reference_output0.push_back(refs[0][0].data[0]);
  }
  double worst = 0, scale = 1e-30;
  std::vector<uint8_t> got;
  for (int r = 0; r < replicas; ++r) {
    const std::vector<eval::Value>& ref = refs[mirrored ? 0 : static_cast<size_t>(r)];
    for (size_t o = 0; o < low.outputs.size() && o < ref.size(); ++o) {
      const eval::Value& want = ref[o];
      const bool bf16 = want.shape.type == hlo::PrimitiveType::kBF16;
      const int64_t n = want.shape.ElementCount();
      const int64_t share = low.outputs[o].split ? n / cores : n;
      got.resize(static_cast<size_t>(share) * (bf16 ? 2 : 4));  // HBM reads fill it
      double output_worst = 0, output_scale = 1e-30;
      for (int c = r; c < (low.outputs[o].split ? cores : r + 1); ++c) {
        sim.core(c).hbm().Read(low.outputs[o].address, got.data(), got.size());
        for (int64_t i = 0; i < share; ++i) {
          const double g = Decode(want.shape.type, got.data(), i);
          const int64_t first = low.outputs[o].split ? c * share : 0;  // of the core's share
          const double w = want.data[static_cast<size_t>(first + i)];
          if (o == 0 && r == 0 && c == 0 && i == 0) check.simulated_output0 = g;
          output_worst = std::max(output_worst, Difference(g, w));
          if (std::isfinite(w)) output_scale = std::max(output_scale, std::fabs(w));
        }
      }
      worst = std::max(worst, output_worst);
      scale = std::max(scale, output_scale);
      if (output_worst / output_scale > check.worst_output_error) {
        check.worst_output_error = output_worst / output_scale;
        check.worst_output = o;
        const hlo::HloInstruction* root = compiled.original.entry()->root();
        check.worst_output_name = root->opcode() == hlo::Opcode::kTuple && o < root->operand_count()
                                      ? "%" + root->operand(o)->name()
                                      : "";
      }
    }
  }
  check.error = worst / scale;
  return check;
}

}  // namespace tpusim::cli
