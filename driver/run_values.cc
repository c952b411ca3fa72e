#include "driver/run_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "compiler/eval/evaluator.h"
#include "compiler/spmd/batch_analysis.h"
#include "compiler/spmd/tiles.h"
#include "driver/step_check.h"
#include "isa/bf16.h"

namespace tpusim::driver {
namespace {

// Optimizer state as `tpusim model` names its parameters (compiler/model/optimizer.cc):
// momentum, Adam's moments and step count.
bool IsOptimizerState(const std::string& parameter_name) {
  const std::string name = parameter_name.substr(0, parameter_name.rfind('.'));  // no ".ID"
  for (const char* suffix : {"_momentum", "_adam_m", "_adam_v"})
    if (name.size() > std::strlen(suffix) && name.ends_with(suffix)) return true;
  return name == "adam_step";
}

// Uniform in [-1, 1) scaled like LeCun initialisation: by 1 / sqrt(fan-in), fan-in = every
// dimension but the last (HWIO kernels, [in, out] matrices).
void ScaleByFanIn(eval::Value& v) {
  const hlo::Shape& s = v.shape;
  const double fan_in = static_cast<double>(s.ElementCount() / std::max<int64_t>(1, s.dims.back()));
  const double scale = 1.0 / std::sqrt(std::max(1.0, fan_in));
  for (double& x : v.data) x = eval::RoundTo(s.type, x * scale);
}

// Vector parameters that scale a value: a multiply's operand through broadcasts and
// reshapes (a layer norm's gamma), or a batch-norm op's scale.
std::set<const hlo::HloInstruction*> Scales(const hlo::HloComputation& entry) {
  std::set<const hlo::HloInstruction*> scales =
      spmd::ParametersFeeding(entry,
                              {hlo::Opcode::kBatchNormTraining, hlo::Opcode::kBatchNormInference,
                               hlo::Opcode::kBatchNormGrad},
                              1);
  for (const auto& i : entry.instructions()) {
    if (i->opcode() != hlo::Opcode::kMultiply) continue;
    for (const hlo::HloInstruction* v : i->operands()) {
      while (v->opcode() == hlo::Opcode::kBroadcast || v->opcode() == hlo::Opcode::kReshape ||
             v->opcode() == hlo::Opcode::kConvert || v->opcode() == hlo::Opcode::kBitcast)
        v = v->operand(0);
      if (v->opcode() == hlo::Opcode::kParameter && v->shape().IsArray() && v->shape().rank() == 1)
        scales.insert(v);
    }
  }
  return scales;
}

// The parameters a training step's initialisation treats apart: weights (a dot's or
// convolution's right-hand operand) and scales.
struct ParameterRoles {
  std::set<const hlo::HloInstruction*> weights, scales;
  explicit ParameterRoles(const hlo::HloComputation& entry)
      : weights(spmd::ParametersFeeding(entry, {hlo::Opcode::kDot, hlo::Opcode::kConvolution}, 1)),
        scales(Scales(entry)) {}
};

// Seeded synthetic data. A training step (a module that donates parameters) starts as a
// Keras model does: weights LeCun-uniform, scales (batch and layer norms' gamma) one, other
// vectors (biases, offsets) zero, optimizer state zero (a random second moment has no root), data
// uniform in [-1, 1) and integers (labels, token ids) in [0, 8) (a class index below every shipped
// model's count), so the step can fit its batch. Any other module gets random values in
// every input (floats of rank >= 2 scaled by fan-in, so sums stay of order one): a check
// that zeros would pass proves nothing.
eval::Value SyntheticInput(const hlo::HloInstruction& p, uint64_t seed, bool training,
                           const ParameterRoles& roles) {
  const hlo::Shape& s = p.shape();
  if (IsOptimizerState(p.name())) return eval::Value::Zeros(s);
  eval::Value v = eval::Value::Random(s, seed);
  if (s.IsArray() && s.type == hlo::PrimitiveType::kS32)
    for (double& x : v.data) x = std::fmod(x, 8.0);
  if (!s.IsArray() || !hlo::IsFloatingType(s.type)) return v;
  if (!training) {
    if (s.rank() >= 2) ScaleByFanIn(v);
  } else if (roles.weights.count(&p)) {
    ScaleByFanIn(v);
  } else if (roles.scales.count(&p)) {
    std::fill(v.data.begin(), v.data.end(), 1.0);
  } else if (s.rank() == 1) {
    std::fill(v.data.begin(), v.data.end(), 0.0);
  }
  return v;
}

}  // namespace

std::vector<uint8_t> EncodeElements(const eval::Value& v, int64_t first, int64_t count) {
  const bool bf16 = v.shape.type == hlo::PrimitiveType::kBF16;
  const int64_t width = ElementBytes(v.shape.type);
  std::vector<uint8_t> out(static_cast<size_t>(count * width));
  for (int64_t i = 0; i < count; ++i) {
    const double x = v.data[static_cast<size_t>(first + i)];
    const float f = static_cast<float>(x);
    if (width != 4 && !bf16) {  // 64-bit integers as their bits
      const uint64_t bits = eval::ToBits(v.shape.type, x);
      std::copy_n(reinterpret_cast<const uint8_t*>(&bits), width, out.data() + width * i);
    } else if (v.shape.type == hlo::PrimitiveType::kU32) {
      const uint32_t n = static_cast<uint32_t>(eval::ToBits(v.shape.type, x));
      std::copy_n(reinterpret_cast<const uint8_t*>(&n), 4, out.data() + 4 * i);
    } else if (bf16) {
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

std::vector<eval::Value> LoadInputs(sim::Simulation& sim, const CompiledModule& compiled,
                                    uint64_t seed) {
  const lowering::LoweredModule& low = compiled.lowered;
  std::vector<eval::Value> args;
  const hlo::HloComputation& entry = *compiled.original.entry();
  const ParameterRoles roles(entry);
  const bool training = !compiled.original.input_output_alias.empty();
  for (const hlo::HloInstruction* p : entry.parameters())
    args.push_back(SyntheticInput(*p, seed + args.size(), training, roles));
  const int cores = static_cast<int>(low.programs.size());
  const bool partitioned = spmd::IsPartitioned(compiled.optimized);
  for (size_t i = 0; i < args.size(); ++i) {
    const hlo::HloInstruction* p = compiled.original.entry()->parameters()[i];
    const passes::BufferInfo* buf = compiled.report.memory.Find(p->name());
    if (!buf || !p->shape().IsArray()) continue;
    if (partitioned) {  // each core's tile of the global argument
      const hlo::HloSharding s = spmd::ParameterSharding(compiled.optimized, p->parameter_number());
      for (int c = 0; c < cores; ++c) {
        const eval::Value tile = spmd::TileOf(args[i], s, c);
        const std::vector<uint8_t> bytes = EncodeElements(tile, 0, tile.size());
        sim.core(c).hbm().Write(static_cast<uint64_t>(buf->offset), bytes.data(), bytes.size());
      }
      continue;
    }
    // Every core gets the whole argument, encoded once.
    const std::vector<uint8_t> bytes = EncodeElements(args[i], 0, p->shape().ElementCount());
    for (int c = 0; c < cores; ++c)
      sim.core(c).hbm().Write(static_cast<uint64_t>(buf->offset), bytes.data(), bytes.size());
  }
  return args;
}

double ValueRunHostBytes(const CompiledModule& compiled, int cores) {
  return kValueRunBytesPerHbmByte * cores * static_cast<double>(compiled.report.peak_hbm_bytes);
}

std::string ValueMemoryNote(const CompiledModule& compiled, int cores, double budget_bytes) {
  const double need = ValueRunHostBytes(compiled, cores);
  if (need <= budget_bytes) return "";
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  char text[400];
  std::snprintf(text, sizeof text,
                "note: values are not checked: a value run would hold about %.1f GiB in host "
                "memory (%d cores x %.1f MiB peak HBM, and the reference evaluator), over the "
                "%.1f GiB budget (--value-memory-gib); this run is timing-only\n",
                need / kGiB, cores, compiled.report.peak_hbm_bytes / (1024.0 * 1024),
                budget_bytes / kGiB);
  return text;
}

}  // namespace tpusim::driver
