// Built-in hardware presets, embedded at build time from sim/configs/*.json.
#pragma once

#include <span>
#include <string_view>

namespace tpusim::sim {

struct Preset {
  std::string_view name;  // file stem, e.g. "v3-8"
  std::string_view json;  // the file's text, comments included
};

std::span<const Preset> Presets();

}  // namespace tpusim::sim
