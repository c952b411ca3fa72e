// Runs one program per core on a whole board.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "sim/simulation.h"

namespace tpusim::sim::testing {

struct BoardRun {
  BoardConfig board;
  std::unique_ptr<Simulation> sim;
  // programs[i] runs on core i.
  BoardRun(const std::vector<std::string>& programs, bool functional = true,
           const std::string& config = "v3-8")
      : board(LoadConfig(config)) {
    sim = std::make_unique<Simulation>(board, RunOptions{.functional = functional});
    for (size_t i = 0; i < programs.size(); ++i) {
      auto p = isa::Assemble(programs[i], "core" + std::to_string(i) + ".s");
      if (!p.ok()) ADD_FAILURE() << p.error().message;
      sim->AddCore(p.ok() ? p.value() : isa::Program{});
    }
  }
  int64_t Cycles(TimeFs fs) const { return std::llround(fs / board.core.cycle_fs()); }
};

// Core c holds x_c[i] = (i * 7 + c * 13) % 101 - 50 at element i of its HBM (the
// all-reduce tests' inputs): small integers, so every summation order gives the exact sum.
inline float AllReduceInput(int core, uint64_t i) {
  return static_cast<float>((i * 7 + static_cast<uint64_t>(core) * 13) % 101) - 50;
}

// Every core's AllReduceInput, `elems` of them, at HBM address 0.
inline void WriteAllReduceInputs(BoardRun& run, uint64_t elems) {
  for (int c = 0; c < 8; ++c) {
    std::vector<float> x(elems);
    for (uint64_t i = 0; i < elems; ++i) x[i] = AllReduceInput(c, i);
    run.sim->core(c).hbm().Write(0, x.data(), x.size() * 4);
  }
}

}  // namespace tpusim::sim::testing
