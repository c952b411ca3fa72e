// Benchmarks read shipped modules from the working directory or else from the source tree
// they were built from.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tpusim::bench {

// The file's text; empty when neither place has it.
inline std::string ReadModule(const std::string& relative_path) {
  namespace fs = std::filesystem;
  const fs::path source_root = fs::path(__FILE__).parent_path().parent_path();
  for (const fs::path& path : {fs::path(relative_path), source_root / relative_path}) {
    std::ifstream in(path);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  return "";
}

}  // namespace tpusim::bench
