#include "compiler/lowering/vpu/stream_op.h"

#include <algorithm>

#include "compiler/lowering/vpu/vpu_stream.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;

StreamOperand Operand(const HloInstruction* v, const OpContext& c) {
  return StreamOperand{c.address(v), ElemBytes(v->shape()), ByteSize(v->shape())};
}

}  // namespace

bool IsF32Scalar(const hlo::Shape& s) {
  return s.IsArray() && s.dims.empty() && s.type == hlo::PrimitiveType::kF32;
}

std::string StreamOp(const HloInstruction& instr, const OpContext& c, LoweredOp& op,
                     std::vector<const HloInstruction*> inputs, const VpuBody* body,
                     int ops_per_vreg) {
  VpuStream st;
  st.tag = instr.name();
  int64_t iter = Elements(instr.shape());
  for (const HloInstruction* in : inputs) {
    if (!in->shape().IsArray()) continue;
    iter = std::max(iter, body ? 0 : Elements(in->shape()));
    if (st.inputs.size() >= 6) continue;
    st.inputs.push_back(Operand(in, c));
    st.inputs.back().splat = body && IsF32Scalar(in->shape());
  }
  st.output = Operand(&instr, c);
  st.vregs = std::max<int64_t>(1, (iter + kVregElements - 1) / kVregElements);
  if (body) {
    st.prologue = body->prologue, st.body = body->body, st.result = body->result;
  } else {  // a reduction-like op: ops_per_vreg folds into an accumulator
    st.prologue = {"vmovi v31, 0.0"};
    for (int k = 0; k < ops_per_vreg; ++k) st.body.push_back("vadd v31, v31, v0");
    st.result = 31;
    st.store_every_vreg = st.output.bytes * 2 >= static_cast<uint64_t>(iter) * st.output.elem_bytes;
    if (st.store_every_vreg) st.result = 31;
  }
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = st.output.bytes;
  for (const StreamOperand& o : st.inputs) op.hbm_bytes += o.bytes;
  return VpuStreamKernel(st);
}

std::string ReductionStreamOp(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  return StreamOp(instr, c, op, {instr.operands().begin(), instr.operands().end()}, nullptr,
                  VpuOpsPerVreg(instr));
}

std::string FillStreamOp(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  VpuBody fill;
  fill.body = {"vmovi v6, 0.0"}, fill.result = 6;
  for (const HloInstruction* o : instr.operands()) fill.inputs.push_back(o);
  fill.inputs.resize(std::min<size_t>(fill.inputs.size(), 6));
  return StreamOp(instr, c, op, fill.inputs, &fill, 0);
}

}  // namespace tpusim::lowering
