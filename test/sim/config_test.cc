// Hardware configs: presets load with their documented numbers; every problem in a
// user's JSON is an error that names the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/config.h"

namespace tpusim::sim {
namespace {
using ::testing::HasSubstr;

std::string ErrorOf(const std::string& json) {
  try {
    ParseConfig(json, "my.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kMinimal = R"({"board": {"chips": 1, "cores_per_chip": 1},
  "core": {"clock_hz": 1e9, "mxus": 1, "hbm_bytes": 1048576,
           "hbm_bandwidth_bytes_per_s": 1e11, "vmem_dma_bandwidth_bytes_per_s": 1e12}})";

TEST(Config, V3PresetHasTheDocumentedNumbers) {
  BoardConfig c = LoadConfig("v3-8");
  EXPECT_EQ(c.cores(), 8);
  EXPECT_EQ(c.core.mxus, 2);
  EXPECT_DOUBLE_EQ(c.core.clock_hz, 940e6);
  EXPECT_DOUBLE_EQ(c.core.hbm_bandwidth_bytes_per_s, 450e9);
  EXPECT_EQ(c.core.hbm_bytes, uint64_t{16} << 30);
  EXPECT_EQ(c.core.vmem_bytes, uint64_t{16} << 20);
  EXPECT_EQ(c.core.mxu_fill_drain_cycles(), 255);
}

TEST(Config, V2PresetHasOneMxuAndSlowerClock) {
  BoardConfig c = LoadConfig("v2-8");
  EXPECT_EQ(c.core.mxus, 1);
  EXPECT_DOUBLE_EQ(c.core.clock_hz, 700e6);
  EXPECT_EQ(c.core.dma_engines, 4);  // a default
}

TEST(Config, DefaultsFillUndeclaredKeys) {
  BoardConfig c = ParseConfig(kMinimal, "my.json");
  EXPECT_EQ(c.core.queue_depth, 32);
  EXPECT_EQ(c.name, "my.json");
}

TEST(Config, UnknownKeyIsNamed) {
  std::string json = kMinimal;
  json.replace(json.find("\"mxus\""), 6, "\"mxu_count\"");
  EXPECT_THAT(ErrorOf(json), HasSubstr("my.json: unknown key 'core.mxu_count'"));
  EXPECT_THAT(ErrorOf(R"({"cores": 8})"), HasSubstr("unknown key 'cores'"));
}

TEST(Config, MissingRequiredKeyIsNamed) {
  std::string json = kMinimal;
  json.replace(json.find("\"clock_hz\": 1e9,"), 16, "");
  EXPECT_THAT(ErrorOf(json), HasSubstr("missing required key 'core.clock_hz'"));
}

TEST(Config, WrongTypesAndBadJsonAreErrors) {
  std::string json = kMinimal;
  json.replace(json.find("\"mxus\": 1"), 9, "\"mxus\": \"two\"");
  EXPECT_THAT(ErrorOf(json), HasSubstr("key 'core.mxus' must be a number"));
  json = kMinimal;
  json.replace(json.find("\"mxus\": 1"), 9, "\"mxus\": 1.5");
  EXPECT_THAT(ErrorOf(json), HasSubstr("key 'core.mxus' must be a non-negative integer"));
  EXPECT_THAT(ErrorOf("{ \"board\": "), HasSubstr("my.json: invalid JSON"));
}

TEST(Config, MissingFileIsAnError) {
  EXPECT_THROW(LoadConfig("/nonexistent/board.json"), ConfigError);
}

}  // namespace
}  // namespace tpusim::sim
