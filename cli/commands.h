// The tpusim subcommands. Each takes its arguments after the subcommand name and
// returns the process exit status; errors are one line on stderr.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
  int order;  // position in `tpusim --help`
};

// Each command's file registers itself: `const bool kRegistered = RegisterCommand({...});`.
bool RegisterCommand(const Command& command);
// The registered commands, sorted by order.
const std::vector<Command>& Commands();

// A user-facing error: printed as "tpusim: <message>" with exit status 1 (2 for usage).
struct CliError : std::runtime_error {
  CliError(const std::string& what, int status = 1) : std::runtime_error(what), status(status) {}
  int status;
};

std::string ReadFileOrThrow(const std::string& path);

}  // namespace tpusim::cli
