// tpusim: the command line, the one place that sees every layer.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>

#include "cli/commands.h"

namespace tpusim::cli {

namespace {
std::vector<Command>& Registry() {
  static std::vector<Command> commands;
  return commands;
}

void Usage(FILE* out) {
  std::fprintf(out, "usage: tpusim <command> [options]   (tpusim <command> --help)\n\ncommands:\n");
  for (const Command& c : Commands()) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}
}  // namespace

bool RegisterCommand(const Command& command) {
  Registry().push_back(command);
  return true;
}

const std::vector<Command>& Commands() {
  std::sort(Registry().begin(), Registry().end(),
            [](const Command& a, const Command& b) { return a.order < b.order; });
  return Registry();
}

std::string ReadFileOrThrow(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tpusim::cli

int main(int argc, char** argv) {
  using namespace tpusim::cli;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : Commands()) {
    if (argv[1] != std::string(c.name)) continue;
    try {
      return c.run(args);
    } catch (const CliError& e) {
      std::fprintf(stderr, "tpusim %s: %s\n", c.name, e.what());
      return e.status;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tpusim %s: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "tpusim: unknown command '%s'\n", argv[1]);
  Usage(stderr);
  return 2;
}
