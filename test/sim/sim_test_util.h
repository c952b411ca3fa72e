// Helpers for simulator tests: assemble a program, run it on one core of a board.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "isa/assembler.h"
#include "sim/simulation.h"
#include "sim/timing.h"

namespace tpusim::sim::testing {

inline isa::Program MustAssemble(const std::string& text) {
  auto p = isa::Assemble(text, "test.s");
  if (!p.ok()) ADD_FAILURE() << p.error().message;
  return p.ok() ? p.value() : isa::Program{};
}

struct SingleCoreRun {
  BoardConfig board = LoadConfig("v3-8");
  RunOptions options;
  std::unique_ptr<Simulation> sim;
  TensorCore* core = nullptr;
  // Builds the simulation for `text`; call setup hooks on `core` before Run().
  explicit SingleCoreRun(const std::string& text, bool functional = true) {
    options.functional = functional;
    sim = std::make_unique<Simulation>(board, options);
    core = &sim->AddCore(MustAssemble(text));
  }
  RunReport Run() { return sim->Run(); }
  int64_t Cycles(TimeFs fs) const { return std::llround(fs / board.core.cycle_fs()); }
};

}  // namespace tpusim::sim::testing
