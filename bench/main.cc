// The benchmark suite's entry point (every bench/*.cc registers its benchmarks).
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
