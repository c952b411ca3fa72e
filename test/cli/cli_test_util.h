// Running the tpusim binary (TPUSIM_BINARY, set by test/cli/CMakeLists.txt) from tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace tpusim::cli {

struct Output {
  int status = -1;
  std::string text;  // stdout and stderr
};

// Runs `tpusim ARGS`; `env` (e.g. "VAR=value ") prefixes the command.
inline Output Tpusim(const std::string& args, const std::string& env = "") {
  std::string cmd = env + std::string(TPUSIM_BINARY) + " " + args + " 2>&1";
  Output out;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.text.append(buf, n);
  int raw = pclose(pipe);
  out.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tpusim::cli
