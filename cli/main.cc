// tpusim: the command line, the one place that sees every layer.
#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw CliError("'" + path + "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw CliError("cannot read '" + path + "': " + std::strerror(errno));
  std::string text = ss.str();
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw CliError("'" + path + "' is not a text file (byte " + std::to_string(nul) + " is NUL)");
  return text;
}

}  // namespace tpusim::cli

namespace {

// Stack of the thread that runs a command. Walks over the instruction graph recurse once per
// level of operands (the VPU body builder, ...): about 500 bytes per level measured on a
// chain of 200,000 negates (64 MiB failed, 128 MiB passed), so 4 GiB of reserved address
// space (committed only as used) takes chains of several million instructions.
constexpr size_t kCommandStackBytes = size_t{4} << 30;

struct Call {
  int argc;
  char** argv;
  int status = 0;
};

int Main(int argc, char** argv);

void* RunMain(void* arg) {
  Call* call = static_cast<Call*>(arg);
  call->status = Main(call->argc, call->argv);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Call call{argc, argv};
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kCommandStackBytes) == 0 &&
      pthread_create(&thread, &attr, RunMain, &call) == 0) {
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
    return call.status;
  }
  return Main(argc, argv);  // no such thread: the process's own stack
}

namespace {

int Main(int argc, char** argv) {
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

}  // namespace
