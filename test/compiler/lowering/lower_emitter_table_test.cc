// The opcode -> emitter table (compiler/lowering/driver/emitter_table.def): every supported
// opcode has its row, each kind of op goes to the emitter of its family, and the ops the
// pipeline removes before lowering have none.
#include <gtest/gtest.h>

#include <set>

#include "compiler/hlo/opcode.h"
#include "compiler/lowering/driver/emitter_table.h"

namespace tpusim::lowering {
namespace {

using hlo::OpCategory;
using hlo::Opcode;
using Kind = EmitterRow::Kind;

// Async pairs (async-conversion makes them synchronous) and ops the passes remove.
// (async-collective-creator makes all-reduces and all-gathers a start and a done again, which
// the lowering takes.)
const std::set<Opcode> kRemovedBeforeLowering = {Opcode::kCollectivePermuteStart,
                                                 Opcode::kCollectivePermuteDone, Opcode::kCopyStart,
                                                 Opcode::kCopyDone, Opcode::kOptimizationBarrier};

std::vector<Opcode> SupportedOpcodes() {
  std::vector<Opcode> ops;
  for (int k = 0; k < static_cast<int>(Opcode::kCount); ++k)
    if (hlo::IsSupported(static_cast<Opcode>(k))) ops.push_back(static_cast<Opcode>(k));
  return ops;
}

TEST(EmitterTable, EverySupportedOpcodeHasARowUnlessThePassesRemoveIt) {
  for (Opcode op : SupportedOpcodes()) {
    const bool row = EmitterFor(op).kind != Kind::kNone;
    EXPECT_EQ(row, !kRemovedBeforeLowering.count(op)) << hlo::OpcodeName(op);
  }
}

TEST(EmitterTable, UnsupportedOpcodesHaveNoRow) {
  for (int k = 0; k < static_cast<int>(Opcode::kCount); ++k) {
    const Opcode op = static_cast<Opcode>(k);
    if (!hlo::IsSupported(op)) {
      EXPECT_EQ(EmitterFor(op).kind, Kind::kNone) << hlo::OpcodeName(op);
    }
  }
}

TEST(EmitterTable, RowsCarryTheirEmitter) {
  for (Opcode op : SupportedOpcodes()) {
    const EmitterRow& r = EmitterFor(op);
    EXPECT_EQ(r.kernel != nullptr, r.kind == Kind::kKernel) << hlo::OpcodeName(op);
    EXPECT_EQ(r.core_kernels != nullptr, r.kind == Kind::kCoreKernels) << hlo::OpcodeName(op);
  }
}

TEST(EmitterTable, ElementwiseOpsGoToTheElementwiseEmitter) {
  int n = 0;
  for (Opcode op : SupportedOpcodes()) {
    const OpCategory c = hlo::GetOpcodeInfo(op).category;
    if (c != OpCategory::kElementwiseUnary && c != OpCategory::kElementwiseBinary &&
        c != OpCategory::kElementwiseTernary)
      continue;
    EXPECT_EQ(EmitterFor(op).kernel, &EmitElementwise) << hlo::OpcodeName(op);
    ++n;
  }
  EXPECT_GE(n, 30);
}

TEST(EmitterTable, CollectivesRunOneKernelPerCore) {
  for (Opcode op :
       {Opcode::kAllReduce, Opcode::kAllReduceStart, Opcode::kAllGather, Opcode::kAllGatherStart,
        Opcode::kReduceScatter, Opcode::kReduceScatterStart, Opcode::kCollectivePermute,
        Opcode::kAllToAll, Opcode::kReplicaId, Opcode::kPartitionId})
    EXPECT_EQ(EmitterFor(op).kind, Kind::kCoreKernels) << hlo::OpcodeName(op);
  EXPECT_EQ(EmitterFor(Opcode::kAllGather).core_kernels, &EmitAllGather);
  EXPECT_EQ(EmitterFor(Opcode::kAllGatherStart).core_kernels, &EmitAllGather);
  EXPECT_EQ(EmitterFor(Opcode::kReduceScatterStart).core_kernels, &EmitReduceScatter);
  EXPECT_EQ(EmitterFor(Opcode::kReduceScatter).core_kernels, &EmitReduceScatter);
}

TEST(EmitterTable, NoCodeAndControlRows) {
  std::set<Opcode> no_code, control;
  for (Opcode op : SupportedOpcodes()) {
    if (EmitterFor(op).kind == Kind::kNoCode) no_code.insert(op);
    if (EmitterFor(op).kind == Kind::kControl) control.insert(op);
  }
  EXPECT_EQ(no_code, (std::set<Opcode>{Opcode::kParameter, Opcode::kConstant, Opcode::kTuple,
                                       Opcode::kGetTupleElement, Opcode::kBitcast, Opcode::kReshape,
                                       Opcode::kAllReduceDone, Opcode::kAllGatherDone,
                                       Opcode::kReduceScatterDone}));
  EXPECT_EQ(control, (std::set<Opcode>{Opcode::kWhile, Opcode::kCall, Opcode::kConditional}));
}

TEST(EmitterTable, ContractionsAndDataMovement) {
  EXPECT_EQ(EmitterFor(Opcode::kDot).kernel, &EmitDot);
  EXPECT_EQ(EmitterFor(Opcode::kConvolution).kernel, &EmitConvolution);
  EXPECT_EQ(EmitterFor(Opcode::kFusion).kernel, &EmitFusion);
  for (Opcode op : {Opcode::kCopy, Opcode::kTranspose, Opcode::kReverse, Opcode::kSlice,
                    Opcode::kConcatenate, Opcode::kPad})
    EXPECT_EQ(EmitterFor(op).kernel, &EmitMove) << hlo::OpcodeName(op);
  EXPECT_EQ(EmitterFor(Opcode::kDynamicUpdateSlice).kernel, &EmitDynamicSlice);
  EXPECT_EQ(EmitterFor(Opcode::kBatchNormGrad).kernel, &EmitBatchNorm);
}

}  // namespace
}  // namespace tpusim::lowering
