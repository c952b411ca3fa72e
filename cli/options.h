// Command-line parsing shared by the subcommands: named options plus one positional
// argument, usage errors as one line pointing at --help.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace tpusim::cli {

// Parses `argv` against `opts` and one positional argument stored in `positional`.
// Usage errors throw CliError with status 2 naming `tpusim <command> --help`. Prints
// `opts` and returns false when --help was given (the command then exits 0).
bool ParseCommandLine(const std::vector<std::string>& argv,
                      const boost::program_options::options_description& opts,
                      const std::string& command, std::string* positional,
                      boost::program_options::variables_map* vm);

}  // namespace tpusim::cli
