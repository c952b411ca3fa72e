#include "driver/step_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/alias.h"
#include "compiler/spmd/tiles.h"
#include "isa/bf16.h"

namespace tpusim::driver {
namespace {

// |got - want|, where a NaN or infinity matches only its like (a NaN would drop out of max).
double Difference(double got, double want) {
  if (std::isnan(got) || std::isnan(want))
    return std::isnan(got) && std::isnan(want) ? 0 : std::numeric_limits<double>::infinity();
  if (std::isinf(got) || std::isinf(want))
    return got == want ? 0 : std::numeric_limits<double>::infinity();
  return std::fabs(got - want);
}

// The spacing of bf16 values around `x` (8 significant bits).
double Bf16Spacing(double x) {
  int e = 0;
  std::frexp(x, &e);  // |x| = m 2^e, m in [0.5, 1)
  return std::ldexp(1.0, e - 8);
}

// For a bf16 result, two values one bf16 step apart are a rounding of nearly equal reals
// (the kernel rounds an f32 computed in its order, the evaluator a double): no error.
double ElementDifference(hlo::PrimitiveType type, double got, double want) {
  const double d = Difference(got, want);
  if (type == hlo::PrimitiveType::kBF16 && std::isfinite(d) && d <= Bf16Spacing(want)) return 0;
  return d;
}

// Leaf o of the entry's result, as the lowering numbers its outputs.
const hlo::HloInstruction& OutputLeaf(const hlo::HloModule& m, size_t o) {
  const hlo::HloInstruction* root = m.entry()->root();
  return root->opcode() == hlo::Opcode::kTuple ? *root->operand(static_cast<int64_t>(o)) : *root;
}

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

bool StoredAsBits(hlo::PrimitiveType t) {
  return t == hlo::PrimitiveType::kU32 || t == hlo::PrimitiveType::kU64 ||
         t == hlo::PrimitiveType::kS64;
}

int64_t ElementBytes(hlo::PrimitiveType t) {
  if (t == hlo::PrimitiveType::kBF16) return 2;
  return StoredAsBits(t) ? hlo::PrimitiveTypeBits(t) / 8 : 4;
}

double Decode(hlo::PrimitiveType type, const uint8_t* bytes, int64_t i) {
  if (StoredAsBits(type)) {
    uint64_t bits = 0;
    const int64_t n = ElementBytes(type);
    std::memcpy(&bits, bytes + n * i, static_cast<size_t>(n));
    return eval::FromBits(type, bits);
  }
  if (type == hlo::PrimitiveType::kBF16) {
    uint16_t b;
    std::memcpy(&b, bytes + 2 * i, 2);
    return isa::Bf16ToF32(b);
  }
  if (type == hlo::PrimitiveType::kS32) {
    int32_t n;
    std::memcpy(&n, bytes + 4 * i, 4);
    return n;
  }
  float f;
  std::memcpy(&f, bytes + 4 * i, 4);
  return f;
}

struct StepCheck::Snapshot {
  int core = 0, step = 0;
  std::vector<std::vector<uint8_t>> outputs;  // the core's share of each result
};

struct StepCheck::Reference {
  std::vector<std::vector<eval::Value>> by_replica;  // one when mirrored or single
  int compared = 0;                                  // cores compared against it so far
};

StepCheck::StepCheck(const CompiledModule& compiled, std::vector<eval::Value> args, int steps)
    : compiled_(compiled), steps_(std::max(1, steps)), fed_back_(FedBack(compiled)) {
  const lowering::LoweredModule& low = compiled.lowered;
  cores_ = static_cast<int>(low.programs.size());
  partitioned_ = spmd::IsPartitioned(compiled.optimized);
  // A replicated module: replica i runs on core i with the same inputs (LoadInputs). A
  // partitioned one: the global program once, or once per device when shard_map bodies
  // give each device its own part.
  replicas_ = low.data_parallel ? 1 : std::min(low.replicas, cores_);
  if (partitioned_) replicas_ = eval::MirrorObstacle(compiled.original, cores_) ? cores_ : 1;
  // Every replica gets the same inputs, so one mirrored interpreter stands for all of
  // them unless some op tells them apart (reduce-scatter, rng, ...).
  mirrored_ = replicas_ > 1 && !eval::MirrorObstacle(compiled.original, replicas_);
  const size_t evaluated = mirrored_ ? 1 : static_cast<size_t>(replicas_);
  inputs_.assign(evaluated - 1, args);
  inputs_.push_back(std::move(args));
  // Without donations every step computes the same from the same arguments: the last is
  // checked.
  first_step_ = next_ref_ = fed_back_.empty() ? steps_ - 1 : 0;
  reported_.assign(static_cast<size_t>(steps_), 0);
  checks_.resize(static_cast<size_t>(steps_));
  for (int s = 0; s < steps_; ++s) checks_[static_cast<size_t>(s)].step = s;
  scale_.assign(static_cast<size_t>(steps_), 1e-30);
}

StepCheck::~StepCheck() = default;

// Data parallel or partitioned: every core holds its share of split results and a copy of
// the others.
bool StepCheck::Checks(int core) const { return core < CheckedCores(); }

int StepCheck::CheckedCores() const {
  return compiled_.lowered.data_parallel || partitioned_ ? cores_ : replicas_;
}

const std::vector<eval::Value>& StepCheck::Want(const Reference& ref, int core) const {
  return ref.by_replica[ref.by_replica.size() == 1 ? 0 : static_cast<size_t>(core)];
}

void StepCheck::OnCoreStepEnd(sim::Simulation& sim, int core, int step) {
  if (step < first_step_ || step >= steps_ || !Checks(core)) return;
  auto snap = std::make_unique<Snapshot>();
  snap->core = core, snap->step = step;
  const auto& outs = compiled_.lowered.outputs;
  for (size_t o = 0; o < outs.size(); ++o) {
    const hlo::Shape& shape = OutputLeaf(compiled_.original, o).shape();
    int64_t share = shape.ElementCount();
    if (partitioned_) {
      const hlo::HloSharding sh = spmd::OutputSharding(compiled_.optimized, o);
      for (size_t d = 0; sh.kind == hlo::HloSharding::Kind::kTiled && d < shape.dims.size(); ++d)
        share /= sh.tile_dims[d];
    }
    snap->outputs.emplace_back(static_cast<size_t>(share * ElementBytes(shape.type)));
    sim.core(core).hbm().Read(outs[o].address, snap->outputs.back().data(),
                              snap->outputs.back().size());
  }
  ++reported_[static_cast<size_t>(step)];
  FeedBack(*snap);
  auto ref = refs_.find(step);
  if (ref == refs_.end()) return waiting_.push_back(std::move(snap));
  Compare(*snap, *ref->second);
  if (++ref->second->compared == CheckedCores()) refs_.erase(ref);
}

// The simulated donated results become the next reference's arguments: the replica's own
// core's copy, or for a partitioned module every core's tile.
void StepCheck::FeedBack(const Snapshot& s) {
  if (s.step + 1 >= steps_) return;
  for (auto [k, i] : fed_back_) {
    if (partitioned_) {  // the core's tile of the result, into every copy of the argument
      const hlo::HloSharding sh = spmd::ParameterSharding(
          compiled_.optimized, compiled_.original.entry()->parameters()[i]->parameter_number());
      eval::Value tile = spmd::TileOf(inputs_[0][i], sh, s.core);
      for (int64_t e = 0; e < tile.size(); ++e)
        tile.data[static_cast<size_t>(e)] = Decode(tile.shape.type, s.outputs[k].data(), e);
      for (auto& replica : inputs_) spmd::PutTile(replica[i], tile, sh, s.core);
      continue;
    }
    if (!(s.core == 0 || (!mirrored_ && replicas_ > 1))) continue;
    eval::Value& in = inputs_[inputs_.size() == 1 ? 0 : static_cast<size_t>(s.core)][i];
    const int64_t n = static_cast<int64_t>(s.outputs[k].size()) / ElementBytes(in.shape.type);
    for (int64_t e = 0; e < n; ++e)
      in.data[static_cast<size_t>(e)] = Decode(in.shape.type, s.outputs[k].data(), e);
  }
}

void StepCheck::Compare(const Snapshot& s, const Reference& ref) {
  const std::vector<eval::Value>& want_all = Want(ref, s.core);
  ValueCheck& check = checks_[static_cast<size_t>(s.step)];
  double& scale = scale_[static_cast<size_t>(s.step)];
  const auto& outs = compiled_.lowered.outputs;
  for (size_t o = 0; o < outs.size() && o < want_all.size(); ++o) {
    const eval::Value tile =
        partitioned_
            ? spmd::TileOf(want_all[o], spmd::OutputSharding(compiled_.optimized, o), s.core)
            : eval::Value();
    const eval::Value& want = partitioned_ ? tile : want_all[o];
    const int64_t n = static_cast<int64_t>(s.outputs[o].size()) / ElementBytes(want.shape.type);
    double worst = 0, own_scale = 1e-30;
    for (int64_t i = 0; i < n; ++i) {
      const double g = Decode(want.shape.type, s.outputs[o].data(), i);
      const double w = want.data[static_cast<size_t>(i)];
      worst = std::max(worst, ElementDifference(want.shape.type, g, w));
      if (std::isfinite(w)) own_scale = std::max(own_scale, std::fabs(w));
    }
    if (o == 0 && s.core == 0 && want.shape.IsArray() && want.shape.rank() == 0) {
      check.has_output0 = true;
      check.simulated_output0 = Decode(want.shape.type, s.outputs[0].data(), 0);
      check.reference_output0 = want.data[0];
    }
    check.error = std::max(check.error, worst);  // absolute until Finish divides by scale
    scale = std::max(scale, own_scale);
    if (worst / own_scale > check.worst_output_error) {
      check.worst_output_error = worst / own_scale;
      check.worst_output = o;
      const hlo::HloInstruction* root = compiled_.original.entry()->root();
      check.worst_output_name = root->opcode() == hlo::Opcode::kTuple
                                    ? "%" + OutputLeaf(compiled_.original, o).name()
                                    : "";
    }
  }
}

void StepCheck::Poll() {
  const int checked_cores = CheckedCores();
  while (next_ref_ < steps_ && (next_ref_ == first_step_ ||
                                reported_[static_cast<size_t>(next_ref_ - 1)] == checked_cores)) {
    auto ref = std::make_unique<Reference>();
    if (inputs_.size() > 1) {
      auto r = eval::EvaluateReplicated(compiled_.original, inputs_);
      if (!r.ok()) throw std::runtime_error("reference evaluator: " + r.status().message());
      ref->by_replica = std::move(r.value());
    } else {
      auto r = mirrored_ ? eval::EvaluateMirrored(compiled_.original, inputs_[0], replicas_)
                         : eval::Evaluate(compiled_.original, inputs_[0]);
      if (!r.ok()) throw std::runtime_error("reference evaluator: " + r.status().message());
      ref->by_replica.push_back(std::move(r.value()));
    }
    const int step = next_ref_++;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if ((*it)->step != step) {
        ++it;
        continue;
      }
      Compare(**it, *ref);
      ++ref->compared;
      it = waiting_.erase(it);
    }
    if (ref->compared < checked_cores) refs_[step] = std::move(ref);
  }
}

std::vector<ValueCheck> StepCheck::Finish() {
  Poll();
  for (size_t s = 0; s < checks_.size(); ++s) checks_[s].error /= scale_[s];
  return {checks_.begin() + first_step_, checks_.end()};
}

ValueCheck CompareWithEvaluator(sim::Simulation& sim, const CompiledModule& compiled,
                                std::vector<eval::Value> args) {
  StepCheck check(compiled, std::move(args), 1);
  check.Poll();
  for (int c = 0; c < static_cast<int>(compiled.lowered.programs.size()); ++c)
    check.OnCoreStepEnd(sim, c, 0);
  return check.Finish()[0];
}

}  // namespace tpusim::driver
