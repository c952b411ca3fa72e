#include "cli/options.h"

#include <iostream>

#include "cli/commands.h"

namespace tpusim::cli {
namespace po = boost::program_options;

bool ParseCommandLine(const std::vector<std::string>& argv, const po::options_description& opts,
                      const std::string& command, std::string* positional, po::variables_map* vm) {
  po::options_description hidden;
  hidden.add_options()("positional", po::value(positional));
  po::positional_options_description pos;
  pos.add("positional", 1);
  po::options_description all;
  all.add(opts).add(hidden);
  try {
    po::store(po::command_line_parser(argv).options(all).positional(pos).run(), *vm);
    po::notify(*vm);
  } catch (const po::error& e) {
    throw CliError(std::string(e.what()) + " (see tpusim " + command + " --help)", 2);
  }
  if (vm->count("help")) {
    std::cout << opts;
    return false;
  }
  return true;
}

}  // namespace tpusim::cli
