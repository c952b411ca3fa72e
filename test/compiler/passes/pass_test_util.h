// Checks shared by the pass tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"

namespace tpusim::passes::testing {

// `m` after a pass: it verifies, and its printed text parses again.
inline void ExpectVerifiesAndReparses(const hlo::HloModule& m) {
  hlo::Status v = hlo::VerifyModule(m);
  EXPECT_TRUE(v.ok()) << v.message();
  const std::string printed = hlo::PrintModule(m);
  hlo::Result<hlo::HloModule> again = hlo::ParseHlo(printed);
  EXPECT_TRUE(again.ok()) << again.status().message() << "\n" << printed;
}

}  // namespace tpusim::passes::testing
