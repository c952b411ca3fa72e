#include "isa/isa_doc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "isa/isa.h"

namespace tpusim::isa {
namespace {

constexpr const char* kPath = "docs/isa.md";  // tests run in the repository root

TEST(IsaDoc, CheckedInDocMatchesTable) {
  std::string want = IsaMarkdown();
  const char* update = std::getenv("TPUSIM_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(kPath, std::ios::binary) << want;
  }
  std::ifstream in(kPath, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << kPath << " (run from the repository root)";
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_TRUE(got.str() == want) << kPath << " is stale; regenerate with scripts/gen-isa-doc.sh "
                                 << "(or TPUSIM_UPDATE_GOLDEN=1 ctest -R isa_doc_test)";
}

TEST(IsaDoc, MentionsEveryMnemonicAndFormula) {
  std::string doc = IsaMarkdown();
  for (const OpInfo& op : AllOps())
    EXPECT_NE(doc.find("| `" + std::string(op.mnemonic) + "` |"), std::string::npos) << op.mnemonic;
  EXPECT_NE(doc.find("| mxu-matmul | busy M cycles"), std::string::npos);
  EXPECT_NE(doc.find("op[0,8) r[8,13) r[13,18) r[18,23)"), std::string::npos);
  EXPECT_EQ(doc.find("### Other"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::isa
