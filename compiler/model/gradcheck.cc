// Finite-difference gradient checks through the reference evaluator.
#include "compiler/model/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/model/autodiff.h"
#include "compiler/model/emit.h"

namespace tpusim::model {
namespace {

hlo::Result<hlo::HloModule> ParseAndVerify(const std::string& text) {
  auto module = hlo::ParseHlo(text, "model");
  if (!module.ok()) return module.status();
  if (hlo::Status st = hlo::VerifyModule(*module); !st.ok()) return st;
  return module;
}

}  // namespace

std::vector<eval::Value> RandomArguments(const Builder& builder, uint64_t seed) {
  std::vector<eval::Value> args;
  for (int p : builder.parameters()) {
    args.push_back(eval::Value::Random(builder.node(p).shape, seed + args.size()));
  }
  return args;
}

hlo::Status CheckGradients(Builder& builder, Op loss, const std::vector<Op>& wrt,
                           const std::vector<eval::Value>& args, const GradCheckOptions& options) {
  auto loss_module = ParseAndVerify(EmitModule(builder, loss));
  if (!loss_module.ok()) return loss_module.status();
  std::vector<Op> outputs = {loss};
  for (Op g : Gradients(loss, wrt)) outputs.push_back(g);
  auto grad_module = ParseAndVerify(EmitModule(builder, Tuple(builder, outputs)));
  if (!grad_module.ok()) return grad_module.status();
  auto analytic = eval::Evaluate(*grad_module, args);
  if (!analytic.ok()) return analytic.status();

  auto loss_at = [&](const std::vector<eval::Value>& a) -> hlo::Result<double> {
    auto r = eval::Evaluate(*loss_module, a);
    if (!r.ok()) return r.status();
    return r->at(0).scalar();
  };
  double worst = 0;
  std::string worst_text;
  for (size_t w = 0; w < wrt.size(); ++w) {
    const Node& param = builder.node(wrt[w]);
    Check(param.opcode == Opcode::kParameter, "CheckGradients: wrt must be parameters");
    const size_t p = static_cast<size_t>(param.index);
    const int64_t n = args.at(p).size();
    const int64_t count = std::min(n, options.entries_per_parameter);
    for (int64_t k = 0; k < count; ++k) {
      const size_t e = static_cast<size_t>(count == 1 ? n / 2 : k * (n - 1) / (count - 1));
      std::vector<eval::Value> plus = args, minus = args;
      plus[p].data[e] += options.step;
      minus[p].data[e] -= options.step;
      auto fp = loss_at(plus), fm = loss_at(minus);
      if (!fp.ok()) return fp.status();
      if (!fm.ok()) return fm.status();
      const double numeric = (*fp - *fm) / (2 * options.step);
      const double got = analytic->at(w + 1).data.at(e);
      const double error = std::abs(got - numeric) / std::max(1.0, std::abs(numeric));
      if (error > worst) {
        worst = error;
        char buf[200];
        std::snprintf(buf, sizeof(buf), "%%%s entry %zu: autodiff %.9g, finite difference %.9g",
                      param.name.c_str(), e, got, numeric);
        worst_text = buf;
      }
    }
  }
  if (worst > options.tolerance) return hlo::Status::Error("gradient mismatch: " + worst_text);
  return hlo::Status::Ok();
}

}  // namespace tpusim::model
