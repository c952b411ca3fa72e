// The emitters: one function per kind of HLO op, each the entry of one kernel family's
// folder. emitter_table.def says which emitter lowers which opcode; the Lowerer asks the
// table (emitter_table.h) and calls the emitter. An emitter fills `op` (kind, FLOPs, bytes,
// exact, note) and returns the kernel's assembly; it picks among its family's kernels (an
// exact one when it takes the shape, else a timing-only one) and throws
// std::invalid_argument with the reason when nothing takes the instruction.
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/lower.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// One kernel that every core runs.
using KernelEmitter = std::string (*)(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
// One kernel per core (ring position, device index).
using CoreKernelsEmitter = std::vector<std::string> (*)(const hlo::HloInstruction&,
                                                        const OpContext&, LoweredOp&);

// dot/dot_emitter.cc: the tiled MXU matmul, or the streaming exact dot.
std::string EmitDot(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
// conv/conv_emitter.cc: weight gradient, implicit GEMM, or the MXU timing model.
std::string EmitConvolution(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
// The same kernel for a convolution fused with its output statistics
// (passes/fusion/conv_stats_fusion.h); empty when `fusion` is not one it takes.
std::string ConvFusionKernel(const hlo::HloInstruction& fusion, const OpContext&, LoweredOp&);

// vpu/elementwise_emitters.cc: VPU streams and the tiled VPU kernel.
std::string EmitElementwise(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitFusion(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitBroadcast(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitIota(const hlo::HloInstruction&, const OpContext&, LoweredOp&);

// reduce/reduce_emitters.cc: reductions, normalization, pooling.
std::string EmitReduce(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitBatchNorm(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitReduceWindow(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitSelectAndScatter(const hlo::HloInstruction&, const OpContext&, LoweredOp&);

// sort/sort_emitter.cc, rng/rng_emitter.cc.
std::string EmitSort(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitRng(const hlo::HloInstruction&, const OpContext&, LoweredOp&);

// data/data_emitters.cc: data movement by DMA.
std::string EmitMove(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitGather(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitScatter(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitDynamicSlice(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::string EmitDmaCopy(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::vector<std::string> EmitDeviceIndex(const hlo::HloInstruction&, const OpContext&, LoweredOp&);

// collective/collective_emitters.cc: ring programs over ICI.
std::vector<std::string> EmitAllReduce(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::vector<std::string> EmitAllGather(const hlo::HloInstruction&, const OpContext&, LoweredOp&);
std::vector<std::string> EmitReduceScatter(const hlo::HloInstruction&, const OpContext&,
                                           LoweredOp&);
std::vector<std::string> EmitCollectivePermute(const hlo::HloInstruction&, const OpContext&,
                                               LoweredOp&);
std::vector<std::string> EmitAllToAll(const hlo::HloInstruction&, const OpContext&, LoweredOp&);

}  // namespace tpusim::lowering
