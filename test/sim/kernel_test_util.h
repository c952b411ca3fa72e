// Shared by the shipped-kernel tests: deterministic bf16 data and file loading.
#pragma once

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "isa/bf16.h"

namespace tpusim::sim::testing {

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// n values uniform in [-1, 1), already rounded to bf16, from a fixed seed.
inline std::vector<float> RandomBf16Values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = isa::RoundToBf16(dist(rng));
  return v;
}

inline std::vector<uint16_t> ToBf16Bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = isa::F32ToBf16(v[i]);
  return out;
}

}  // namespace tpusim::sim::testing
