// Checks a partitioning by values: the global module evaluated as written (once, or once per
// device when shard_map bodies run), the partitioned one on every device with its tiles of
// the arguments; each device's results must be its tiles of the global results.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/spmd/spmd_partitioner.h"
#include "compiler/spmd/tiles.h"

namespace tpusim::spmd {

inline constexpr int64_t kDevices = 8;

// Whether IR text `ir` holds `s`, and how many times.
inline bool Has(const std::string& ir, const std::string& s) {
  return ir.find(s) != std::string::npos;
}
inline int Count(const std::string& ir, const std::string& s) {
  int n = 0;
  for (size_t p = ir.find(s); p != std::string::npos; p = ir.find(s, p + 1)) ++n;
  return n;
}

// A scalar f32 add, the reducer of the modules the tests write.
inline constexpr char kAdd[] =
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n}\n";

// Partitions `text` over kDevices; the per-device module, printed ("" on failure).
inline std::string Partition(const std::string& text, hlo::HloModule* out = nullptr) {
  auto m = hlo::ParseHlo(text, "m.hlo");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "";
  SpmdPartitionerPass pass(kDevices);
  auto changed = pass.Run(m.value());
  EXPECT_TRUE(changed.ok()) << changed.status().message();
  if (!changed.ok()) return "";
  hlo::Status v = hlo::VerifyModule(m.value());
  EXPECT_TRUE(v.ok()) << v.message();
  std::string printed = hlo::PrintModule(m.value());
  if (out) *out = std::move(m.value());
  return printed;
}

// The largest |device result - its tile of the global result| over every device and result.
inline double PartitionError(const std::string& text, uint64_t seed = 1) {
  auto global = hlo::ParseHlo(text, "m.hlo");
  EXPECT_TRUE(global.ok()) << global.status().message();
  if (!global.ok()) return 1e30;
  std::vector<eval::Value> args;
  for (const hlo::HloInstruction* p : global->entry()->parameters()) {
    args.push_back(eval::Value::Random(p->shape(), seed + args.size()));
  }
  const bool per_device = eval::MirrorObstacle(global.value(), kDevices).has_value();
  std::vector<eval::Value> want;
  if (per_device) {
    auto r = eval::EvaluateReplicated(global.value(), std::vector(kDevices, args));
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return 1e30;
    want = r.value()[0];
  } else {
    auto r = eval::Evaluate(global.value(), args);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return 1e30;
    want = r.value();
  }
  hlo::HloModule local;
  if (Partition(text, &local).empty()) return 1e30;
  std::vector<std::vector<eval::Value>> per(kDevices, std::vector<eval::Value>(args.size()));
  for (int64_t d = 0; d < kDevices; ++d) {
    for (const hlo::HloInstruction* p : local.entry()->parameters()) {
      const size_t n = static_cast<size_t>(p->parameter_number());
      per[d].at(n) = TileOf(args.at(n), ParameterSharding(local, p->parameter_number()), d);
    }
  }
  auto got = eval::EvaluateReplicated(local, per);
  EXPECT_TRUE(got.ok()) << got.status().message();
  if (!got.ok()) return 1e30;
  double worst = 0;
  for (int64_t d = 0; d < kDevices; ++d) {
    EXPECT_EQ(got.value()[d].size(), want.size());
    for (size_t o = 0; o < want.size() && o < got.value()[d].size(); ++o) {
      eval::Value tile = TileOf(want[o], OutputSharding(local, o), d);
      const eval::Value& g = got.value()[d][o];
      EXPECT_EQ(g.data.size(), tile.data.size()) << "result " << o << " on device " << d;
      for (size_t e = 0; e < g.data.size() && e < tile.data.size(); ++e) {
        worst = std::max(worst, std::fabs(g.data[e] - tile.data[e]));
      }
    }
  }
  return worst;
}

}  // namespace tpusim::spmd
