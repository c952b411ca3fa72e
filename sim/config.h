// Hardware description of a board, loaded from JSON. Every key is declared in
// config.cc with a default or as required, and a source; unknown keys are errors.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::sim {

struct CoreConfig {
  double clock_hz = 0;
  int mxus = 0;
  int mxu_rows = 0;
  int mxu_cols = 0;
  int mxu_weight_load_cycles = 0;
  int mxu_pop_rows_per_cycle = 0;
  int mxu_result_buffer_rows = 0;
  uint64_t vmem_bytes = 0;
  uint64_t smem_bytes = 0;
  uint64_t hbm_bytes = 0;
  double hbm_bandwidth_bytes_per_s = 0;
  double vmem_dma_bandwidth_bytes_per_s = 0;
  int dma_latency_cycles = 0;
  int dma_engines = 0;
  uint64_t dma_chunk_bytes = 0;
  int queue_depth = 0;
  int scalar_cycles = 0;
  int branch_penalty_cycles = 0;
  int sync_cycles = 0;
  int vpu_load_store_cycles = 0;
  int vpu_alu_cycles = 0;
  int vpu_transcendental_cycles = 0;
  int vpu_cross_lane_cycles = 0;
  int vpu_transpose_cycles = 0;
  // VLIW issue: vector slots per bundle for ALU work (every class but load/store) and for
  // loads and stores; a vloop body issues as fast as its busiest slot class allows.
  int vpu_alu_slots = 0;
  int vpu_load_store_slots = 0;
  // MXU latency from the last row entering to its results in the accumulators:
  // rows + cols - 2 cycles through the skewed array plus one accumulator write
  // (test/sim/systolic_array_test.cc proves this cycle by cycle).
  int mxu_fill_drain_cycles() const { return mxu_rows + mxu_cols - 1; }
  double cycle_fs() const { return 1e15 / clock_hz; }
};

// Chip-to-chip interconnect: chips in a torus_x x torus_y 2D torus; each pair of
// neighbouring chips is joined by `ici_links_per_neighbor` links in each direction.
struct IciConfig {
  int torus_x = 0;
  int torus_y = 0;
  int links_per_neighbor = 0;
  double link_bandwidth_bytes_per_s = 0;    // one link, one direction
  int latency_cycles = 0;                   // per hop
  double onchip_bandwidth_bytes_per_s = 0;  // between the two cores of a chip, each way
  int onchip_latency_cycles = 0;
};

// The host the board hangs off: PCIe per chip and the cost of dispatching work.
struct HostConfig {
  double pcie_bandwidth_bytes_per_s = 0;  // per chip, host to device
  double pcie_latency_us = 0;
  double dispatch_overhead_us = 0;  // host time per dispatch (one execution of K steps)
  double launch_latency_us = 0;     // from dispatch to the cores starting
};

struct BoardConfig {
  std::string name;
  int chips = 0;
  int cores_per_chip = 0;
  CoreConfig core;
  IciConfig ici;
  HostConfig host;
  int cores() const { return chips * cores_per_chip; }
};

// Loads a preset ("v3-8", "v2-8") or a JSON file (comments allowed). Throws
// ConfigError naming the file and key on any problem.
BoardConfig LoadConfig(std::string_view preset_or_path);
BoardConfig ParseConfig(std::string_view json_text, std::string_view origin);
std::vector<std::string> PresetNames();
// Markdown table of every declared key: section, key, default or required, meaning.
std::string ConfigKeysMarkdown();

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tpusim::sim
