// tpusim bench: runs the microbenchmark suite (bench/, the tpusim_bench binary) one
// benchmark per process, since SystemC elaborates once per process, and merges their
// Google Benchmark JSON into one file.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/commands.h"
#include "driver/progress.h"
#include "sim/config.h"
#include "traces/atomic_file.h"

extern char** environ;

namespace tpusim::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

// TPUSIM_BENCH_BINARY, else tpusim_bench where the build puts it: ../bench/ from tpusim.
std::string BenchBinary() {
  if (const char* env = std::getenv("TPUSIM_BENCH_BINARY")) return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path().parent_path() / "bench" / "tpusim_bench").string();
}

// Runs `argv` (no shell) with stdout captured (or discarded when null) and stderr into
// the file `stderr_path`. Returns the exit status (-1 if it did not exit normally).
int RunChild(const std::vector<std::string>& argv, std::string* captured_stdout,
             const std::string& stderr_path) {
  int fds[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (captured_stdout) {
    if (pipe(fds) != 0) throw CliError("cannot create a pipe to " + argv[0]);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (captured_stdout) {
    close(fds[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) captured_stdout->append(buf, n);
    close(fds[0]);
  }
  if (err != 0) throw CliError("cannot run " + argv[0] + ": " + std::strerror(err));
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> ListBenchmarks(const std::string& binary, const std::string& filter) {
  std::string out;
  if (RunChild({binary, "--benchmark_list_tests=true", "--benchmark_filter=" + filter}, &out,
               "/dev/null") != 0)
    throw CliError(binary + " --benchmark_list_tests failed");
  std::vector<std::string> names;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}

// A regex matching exactly `name`.
std::string ExactRegex(const std::string& name) {
  std::string re = "^";
  for (char c : name) {
    if (std::string_view(".^$|()[]{}*+?\\").find(c) != std::string_view::npos) re += '\\';
    re += c;
  }
  return re + "$";
}

nlohmann::ordered_json ReadJson(const std::string& path) {
  std::ifstream in(path);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("benchmarks"))
    throw CliError("benchmark output " + path + " is not Google Benchmark JSON");
  return j;
}

// One line per result: its name and counters, e.g. "BM_X/8  mxu_pct=42.1 tflops=12.5".
void PrintResult(const nlohmann::ordered_json& b) {
  std::printf("%-40s", b.value("name", "?").c_str());
  if (b.value("error_occurred", false))
    std::printf("  ERROR: %s", b.value("error_message", "").c_str());
  for (const auto& [key, value] : b.items()) {
    static const std::vector<std::string> kNotCounters = {
        "family_index", "per_family_instance_index",
        "repetitions",  "repetition_index",
        "threads",      "iterations",
        "real_time",    "cpu_time"};
    if (!value.is_number() ||
        std::find(kNotCounters.begin(), kNotCounters.end(), key) != kNotCounters.end())
      continue;
    std::printf("  %s=%.4g", key.c_str(), value.get<double>());
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int BenchCommand(const std::vector<std::string>& argv) {
  std::string filter = ".", json_path, config = "v3-8";
  po::options_description opts(
      "usage: tpusim bench [options]\n"
      "Runs the microbenchmark suite (simulated v3-8 matmul, HBM, VPU and all-reduce\n"
      "figures, and the simulator's own speed), one benchmark per process, and prints one\n"
      "line of simulated figures per benchmark (docs/benchmarks.md explains them).\n"
      "example: tpusim bench --filter 'BM_MatmulBatchPerCore' --json out/bench.json\n\n"
      "options");
  opts.add_options()("help,h", "show this help")(
      "filter", po::value(&filter), "run only benchmarks whose name matches REGEX (default: all)")(
      "json", po::value(&json_path), "write every result as one Google Benchmark JSON to FILE")(
      "list", "list the benchmark names instead of running them")(
      "config", po::value(&config),
      "board of the simulated-hardware benchmarks: a preset or a JSON file (default v3-8; the "
      "simulator-speed benchmarks always use v3-8)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argv).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw CliError(std::string(e.what()) + " (see tpusim bench --help)", 2);
  }
  if (vm.count("help")) {
    std::cout << opts;
    return 0;
  }
  try {
    std::regex(filter, std::regex::extended);
  } catch (const std::regex_error& e) {
    throw CliError("--filter '" + filter + "' is not a valid regular expression", 2);
  }
  sim::LoadConfig(config);  // a bad config fails here, once, with the key at fault
  setenv("TPUSIM_BENCH_CONFIG", config.c_str(), 1);
  const std::string binary = BenchBinary();
  if (access(binary.c_str(), X_OK) != 0)
    throw CliError("no benchmark binary at " + binary +
                   "; build it with cmake -DTPUSIM_BENCH=ON (or set TPUSIM_BENCH_BINARY)");
  const std::vector<std::string> names = ListBenchmarks(binary, filter);
  if (names.empty())
    throw CliError("no benchmark matches --filter '" + filter + "' (tpusim bench --list)");
  if (vm.count("list")) {
    for (const std::string& name : names) std::printf("%s\n", name.c_str());
    return 0;
  }

  std::string tmp_template = (fs::temp_directory_path() / "tpusim_bench.XXXXXX").string();
  if (!mkdtemp(tmp_template.data())) throw CliError("cannot create a temporary directory");
  const fs::path tmp_dir = tmp_template;
  nlohmann::ordered_json merged;
  bool failed = false;
  driver::ProgressBar bar(static_cast<int64_t>(names.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    bar.Update(static_cast<int64_t>(i),
               names[i] + " (" + std::to_string(i + 1) + "/" + std::to_string(names.size()) + ")");
    const std::string out = (tmp_dir / (std::to_string(i) + ".json")).string();
    const std::string log = (tmp_dir / (std::to_string(i) + ".stderr")).string();
    const int status = RunChild({binary, "--benchmark_filter=" + ExactRegex(names[i]),
                                 "--benchmark_out=" + out, "--benchmark_out_format=json"},
                                nullptr, log);
    bar.Clear();
    if (status != 0) {  // its stderr (the Google Benchmark banner and the failure) explains
      std::printf("%-40s  ERROR: exited with status %d\n", names[i].c_str(), status);
      std::fflush(stdout);
      std::fputs(ReadFileOrThrow(log).c_str(), stderr);
      failed = true;
      continue;
    }
    nlohmann::ordered_json result = ReadJson(out);
    if (merged.is_null()) {
      merged = {{"context", result["context"]}, {"benchmarks", nlohmann::ordered_json::array()}};
      merged["context"]["tpusim_config"] = config;
    }
    for (const auto& b : result["benchmarks"]) {
      PrintResult(b);
      failed = failed || b.value("error_occurred", false);
      merged["benchmarks"].push_back(b);
    }
  }
  bar.Finish();
  fs::remove_all(tmp_dir);
  if (!json_path.empty() && !merged.is_null()) {
    if (std::string err = traces::WriteFileAtomic(json_path, merged.dump(1) + "\n"); !err.empty())
      throw CliError(err);
  }
  if (failed) throw CliError("some benchmarks failed (see the ERROR lines)");
  return 0;
}

namespace {
const bool kRegistered =
    RegisterCommand({"bench", "run the microbenchmark suite (simulated TPU and simulator speed)",
                     BenchCommand, 50});
}  // namespace

}  // namespace tpusim::cli
