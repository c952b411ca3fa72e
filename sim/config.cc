#include "sim/config.h"

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/presets.h"

namespace tpusim::sim {
namespace {

// One declared parameter: where it lives in the JSON, where it goes in BoardConfig.
struct Param {
  std::string_view section;  // "board", "ici", "host" or "core"
  std::string_view key;
  bool required;
  double default_value;
  bool integer;
  std::string_view meaning;
  void (*store)(BoardConfig&, double);
};

#define F(field) [](BoardConfig& c, double v) { c.field = static_cast<decltype(c.field)>(v); }
const std::vector<Param>& Params() {
  static const std::vector<Param> kParams = {
      {"board", "chips", true, 0, true, "TPU chips on the board", F(chips)},
      {"board", "cores_per_chip", true, 0, true, "TensorCores per chip", F(cores_per_chip)},
      {"ici", "torus_x", false, 1, true, "chips along x of the 2D torus", F(ici.torus_x)},
      {"ici", "torus_y", false, 1, true, "chips along y of the 2D torus", F(ici.torus_y)},
      {"ici", "links_per_neighbor", false, 0, true, "links joining two neighbouring chips",
       F(ici.links_per_neighbor)},
      {"ici", "link_bandwidth_bytes_per_s", false, 0, false, "one link, one direction",
       F(ici.link_bandwidth_bytes_per_s)},
      {"ici", "latency_cycles", false, 1000, true, "latency of one chip-to-chip hop",
       F(ici.latency_cycles)},
      {"ici", "onchip_bandwidth_bytes_per_s", false, 0, false,
       "between the two cores of a chip, each way", F(ici.onchip_bandwidth_bytes_per_s)},
      {"ici", "onchip_latency_cycles", false, 200, true, "latency between the cores of a chip",
       F(ici.onchip_latency_cycles)},
      {"host", "pcie_bandwidth_bytes_per_s", false, 16e9, false, "PCIe per chip, host to device",
       F(host.pcie_bandwidth_bytes_per_s)},
      {"host", "pcie_latency_us", false, 5, false, "PCIe transfer start-up",
       F(host.pcie_latency_us)},
      {"host", "dispatch_overhead_us", false, 150, false,
       "host time per dispatch of steps_per_execution steps", F(host.dispatch_overhead_us)},
      {"host", "launch_latency_us", false, 10, false, "dispatch to the cores starting",
       F(host.launch_latency_us)},
      {"core", "clock_hz", true, 0, false, "core clock", F(core.clock_hz)},
      {"core", "mxus", true, 0, true, "matrix units per core", F(core.mxus)},
      {"core", "mxu_rows", false, 128, true, "systolic array rows (weights held)",
       F(core.mxu_rows)},
      {"core", "mxu_cols", false, 128, true, "systolic array columns", F(core.mxu_cols)},
      {"core", "mxu_weight_load_cycles", false, 128, true,
       "cycles to stage one weight tile (one row per cycle)", F(core.mxu_weight_load_cycles)},
      {"core", "mxu_pop_rows_per_cycle", false, 1, true, "accumulator rows popped per cycle",
       F(core.mxu_pop_rows_per_cycle)},
      {"core", "mxu_result_buffer_rows", false, 4096, true, "f32 accumulator rows per MXU",
       F(core.mxu_result_buffer_rows)},
      {"core", "vmem_bytes", false, 16 << 20, true, "vector memory per core", F(core.vmem_bytes)},
      {"core", "smem_bytes", false, 16 << 10, true, "scalar memory per core", F(core.smem_bytes)},
      {"core", "hbm_bytes", true, 0, true, "HBM per core", F(core.hbm_bytes)},
      {"core", "hbm_bandwidth_bytes_per_s", true, 0, false, "HBM bandwidth per core",
       F(core.hbm_bandwidth_bytes_per_s)},
      {"core", "vmem_dma_bandwidth_bytes_per_s", true, 0, false,
       "bandwidth of the VMEM port DMA engines use", F(core.vmem_dma_bandwidth_bytes_per_s)},
      {"core", "dma_latency_cycles", false, 500, true, "fixed DMA start-up latency",
       F(core.dma_latency_cycles)},
      {"core", "dma_engines", false, 4, true, "DMA copies in flight per core", F(core.dma_engines)},
      {"core", "dma_chunk_bytes", false, 65536, true, "DMA arbitration granule",
       F(core.dma_chunk_bytes)},
      {"core", "queue_depth", false, 32, true, "instructions each unit queue holds",
       F(core.queue_depth)},
      {"core", "scalar_cycles", false, 1, true, "scalar instruction cost", F(core.scalar_cycles)},
      {"core", "branch_penalty_cycles", false, 2, true, "extra cycles of a taken branch",
       F(core.branch_penalty_cycles)},
      {"core", "sync_cycles", false, 1, true, "cost of wait/signal/sflag", F(core.sync_cycles)},
      {"core", "vpu_load_store_cycles", false, 1, true, "vld/vst per vector register",
       F(core.vpu_load_store_cycles)},
      {"core", "vpu_alu_cycles", false, 1, true, "simple vector op per register",
       F(core.vpu_alu_cycles)},
      {"core", "vpu_transcendental_cycles", false, 4, true, "exp/log/tanh/div/sqrt per register",
       F(core.vpu_transcendental_cycles)},
      {"core", "vpu_cross_lane_cycles", false, 8, true, "reduction/permute per register",
       F(core.vpu_cross_lane_cycles)},
      {"core", "vpu_transpose_cycles", false, 32, true, "128x128 transpose (16 registers)",
       F(core.vpu_transpose_cycles)},
      {"core", "vpu_alu_slots", false, 2, true, "vector ALU ops per VLIW bundle",
       F(core.vpu_alu_slots)},
      {"core", "vpu_load_store_slots", false, 2, true, "vector loads/stores per VLIW bundle",
       F(core.vpu_load_store_slots)},
  };
  return kParams;
}
#undef F

std::string ReadFile(std::string_view path) {
  std::ifstream in{std::string(path), std::ios::binary};
  if (!in) throw ConfigError("cannot open config file '" + std::string(path) + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Validate(const BoardConfig& c, std::string_view origin) {
  auto fail = [&](const std::string& what) {
    throw ConfigError(std::string(origin) + ": " + what);
  };
  if (c.chips <= 0 || c.cores_per_chip <= 0) fail("board.chips and cores_per_chip must be > 0");
  if (c.core.clock_hz <= 0) fail("core.clock_hz must be > 0");
  if (c.ici.torus_x * c.ici.torus_y != c.chips)
    fail("ici.torus_x * ici.torus_y must equal board.chips");
  if (c.chips > 1 && (c.ici.links_per_neighbor < 1 || c.ici.link_bandwidth_bytes_per_s <= 0))
    fail("a board of several chips needs ici links with bandwidth > 0");
  if (c.cores_per_chip > 1 && c.ici.onchip_bandwidth_bytes_per_s <= 0)
    fail("ici.onchip_bandwidth_bytes_per_s must be > 0");
  if (c.core.mxus < 1 || c.core.mxus > 4) fail("core.mxus must be 1..4");
  if (c.core.hbm_bandwidth_bytes_per_s <= 0 || c.core.vmem_dma_bandwidth_bytes_per_s <= 0)
    fail("bandwidths must be > 0");
  if (c.host.pcie_bandwidth_bytes_per_s <= 0) fail("host.pcie_bandwidth_bytes_per_s must be > 0");
  if (c.core.dma_engines < 1 || c.core.queue_depth < 1) fail("dma_engines, queue_depth >= 1");
  if (c.core.dma_chunk_bytes < 256) fail("core.dma_chunk_bytes must be >= 256");
  if (c.core.vpu_alu_slots < 1 || c.core.vpu_load_store_slots < 1)
    fail("core.vpu_alu_slots and vpu_load_store_slots must be >= 1");
  if (c.core.mxu_rows != 128 || c.core.mxu_cols != 128)
    fail("only 128x128 MXUs are modeled (the ISA's weight tile is bf16[128,128])");
}

}  // namespace

BoardConfig ParseConfig(std::string_view json_text, std::string_view origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text, nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(std::string(origin) + ": invalid JSON: " + e.what());
  }
  if (!j.is_object()) throw ConfigError(std::string(origin) + ": top level must be an object");
  BoardConfig c;
  std::map<std::string, bool> seen;
  for (auto& [section, body] : j.items()) {
    if (section == "name") {
      if (!body.is_string()) throw ConfigError(std::string(origin) + ": 'name' must be a string");
      c.name = body.get<std::string>();
      continue;
    }
    if (section != "board" && section != "core" && section != "ici" && section != "host")
      throw ConfigError(std::string(origin) + ": unknown key '" + section + "'");
    if (!body.is_object())
      throw ConfigError(std::string(origin) + ": '" + section + "' must be an object");
    for (auto& [key, value] : body.items()) {
      std::string full = section + "." + key;
      const Param* p = nullptr;
      for (const Param& q : Params())
        if (q.section == section && q.key == key) p = &q;
      if (!p) throw ConfigError(std::string(origin) + ": unknown key '" + full + "'");
      if (!value.is_number())
        throw ConfigError(std::string(origin) + ": key '" + full + "' must be a number");
      double v = value.get<double>();
      if (p->integer && (v != std::floor(v) || v < 0))
        throw ConfigError(std::string(origin) + ": key '" + full +
                          "' must be a non-negative integer");
      p->store(c, v);
      seen[full] = true;
    }
  }
  for (const Param& p : Params()) {
    std::string full = std::string(p.section) + "." + std::string(p.key);
    if (seen.count(full)) continue;
    if (p.required)
      throw ConfigError(std::string(origin) + ": missing required key '" + full + "'");
    p.store(c, p.default_value);
  }
  if (c.name.empty()) c.name = std::string(origin);
  Validate(c, origin);
  return c;
}

BoardConfig LoadConfig(std::string_view preset_or_path) {
  for (const Preset& p : Presets())
    if (p.name == preset_or_path) return ParseConfig(p.json, p.name);
  return ParseConfig(ReadFile(preset_or_path), preset_or_path);
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : Presets()) names.emplace_back(p.name);
  return names;
}

std::string ConfigKeysMarkdown() {
  std::ostringstream out;
  out << "| key | default | meaning |\n|---|---|---|\n";
  for (const Param& p : Params()) {
    out << "| `" << p.section << "." << p.key << "` | ";
    if (p.required)
      out << "required";
    else
      out << p.default_value;
    out << " | " << p.meaning << " |\n";
  }
  return out.str();
}

}  // namespace tpusim::sim
