// Helpers of the lowering tests: a module compiled for v3-8's eight cores (a 2x2x2 torus
// ring, two MXUs per core) and look-ups in its lowered ops.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "compiler/collectives/ring_allreduce.h"
#include "compiler/compile.h"

namespace tpusim::testing {

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline CompileTarget Board() {
  CompileTarget t;
  t.lowering.cores = 8;
  t.lowering.mxus_per_core = 2;
  t.lowering.ring = collectives::TorusRing(2, 2, 2);
  return t;
}

// Null (after a test failure) when `text` does not compile.
inline std::shared_ptr<const CompiledModule> Compile(const std::string& text,
                                                     const CompileTarget& target = Board()) {
  auto c = CompileForBoard(text, "test.hlo", target);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? c.value() : nullptr;
}

inline const lowering::LoweredOp* Find(const lowering::LoweredModule& m, const std::string& name) {
  for (const auto& op : m.ops)
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace tpusim::testing
