// Internal helpers shared by the verifier's files.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"

#define HLO_RETURN_IF_ERROR(expr)      \
  do {                                 \
    ::tpusim::hlo::Status _s = (expr); \
    if (!_s.ok()) return _s;           \
  } while (0)

namespace tpusim::hlo::verify {

using Wide = __int128;  // shape arithmetic that cannot overflow for int64 inputs

inline Status Error(const HloInstruction& i, const std::string& msg) {
  return Status::Error("%" + i.name() + ": " + msg);
}
inline std::string Str(const Shape& s) { return s.ToString(false); }
inline std::string Str(int64_t v) { return std::to_string(v); }

// The result shape must match `want` (ignoring layouts).
Status ExpectShape(const HloInstruction& i, const Shape& want);
// Every operand must be an array.
Status ExpectArrayOperands(const HloInstruction& i);
// `dims` must be distinct and within [0, rank).
Status ExpectDims(const HloInstruction& i, const IntList& dims, int64_t rank,
                  const std::string& what);
// An IntList attribute that must be present.
Status RequireIntList(const HloInstruction& i, const char* key, const IntList** out);
// A called computation's parameters must match `params` and its root `root` (when given).
Status ExpectSignature(const HloInstruction& i, const HloComputation* c, const char* role,
                       const std::vector<Shape>& params, const Shape* root);

Status VerifyElementwise(const HloModule& m, const HloInstruction& i);
Status VerifyDataMovement(const HloModule& m, const HloInstruction& i);
Status VerifyContraction(const HloModule& m, const HloInstruction& i);
Status VerifyReduction(const HloModule& m, const HloInstruction& i);
Status VerifyGatherScatter(const HloModule& m, const HloInstruction& i);
Status VerifyControl(const HloModule& m, const HloInstruction& i);
Status VerifyCollective(const HloModule& m, const HloInstruction& i);

}  // namespace tpusim::hlo::verify
