// input_output_alias as XLA prints it: entries, shape indices, kinds, and errors.
#include <gtest/gtest.h>

#include "compiler/hlo/alias.h"

namespace tpusim::hlo {
namespace {

TEST(InputOutputAlias, ParsesEveryEntry) {
  auto a = ParseInputOutputAlias(" {1}: (2, {}, may-alias), {0, 3}: (0, {1}, must-alias) ");
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].output_index, std::vector<int64_t>{1});
  EXPECT_EQ((*a)[0].parameter, 2);
  EXPECT_TRUE((*a)[0].parameter_index.empty());
  EXPECT_FALSE((*a)[0].must_alias);
  EXPECT_EQ((*a)[1].output_index, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ((*a)[1].parameter_index, std::vector<int64_t>{1});
  EXPECT_TRUE((*a)[1].must_alias);
}

TEST(InputOutputAlias, EmptyTextAndWholeOutput) {
  auto none = ParseInputOutputAlias("  ");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto whole = ParseInputOutputAlias("{}: (0, {})");  // the kind is optional
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_EQ(whole->size(), 1u);
  EXPECT_TRUE((*whole)[0].output_index.empty());
}

TEST(InputOutputAlias, ErrorsSayWhatAndWhere) {
  EXPECT_EQ(ParseInputOutputAlias("{1}: (x, {})").status().message(),
            "input_output_alias: expected '{output index}: (parameter, {parameter index}, "
            "kind)' at offset 0");
  EXPECT_EQ(ParseInputOutputAlias("{1}: (0, {}, maybe)").status().message(),
            "input_output_alias: kind must be may-alias or must-alias, got 'maybe'");
  EXPECT_EQ(ParseInputOutputAlias("{1}: (0, {}) junk").status().message(),
            "input_output_alias: unexpected text at offset 13");
}

}  // namespace
}  // namespace tpusim::hlo
