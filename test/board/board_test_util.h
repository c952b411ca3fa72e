// Runs one program per core on a whole board.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace tpusim::sim::testing
