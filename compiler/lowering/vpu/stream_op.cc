#include "compiler/lowering/vpu/stream_op.h"

#include <algorithm>

#include "compiler/lowering/dot/mxu_ops.h"
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
  st.vmem_bytes = c.vmem_limit;
  op.vmem_bytes = VpuStreamVmemBytes(st);
  return VpuStreamKernel(st);
}

bool MultiOutputLoopOnExactKernel(const HloInstruction& fusion) {
  return MultiOutputLoopBody(fusion).has_value();
}

std::optional<VpuBody> MultiOutputLoopBody(const HloInstruction& fusion) {
  const hlo::HloComputation* f = fusion.fused_computation();
  if (!f || fusion.GetWord("kind").value_or("") != "kLoop" ||
      f->root()->opcode() != hlo::Opcode::kTuple || !fusion.shape().IsTuple())
    return std::nullopt;
  const std::vector<hlo::Shape>& shapes = fusion.shape().tuple_shapes;
  if (shapes.size() < 2 || shapes.size() > 3) return std::nullopt;
  const int64_t n = shapes[0].ElementCount();
  for (const hlo::Shape& s : shapes)
    if (!FloatOrBf16(s) || s.ElementCount() != n || n % kVregElements) return std::nullopt;
  VpuBody body = BuildVpuBody(fusion);
  size_t streamed = 0;
  for (const HloInstruction* in : body.inputs) {
    if (IsF32Scalar(in->shape())) continue;
    const hlo::PrimitiveType t = in->shape().type;
    if (in->shape().ElementCount() != n ||
        !(FloatOrBf16(in->shape()) || t == hlo::PrimitiveType::kS32 ||
          t == hlo::PrimitiveType::kU32))
      return std::nullopt;
    ++streamed;
  }
  if (!body.exact || body.inputs.size() > 6 || streamed + shapes.size() > 8 ||
      body.results.size() != shapes.size())
    return std::nullopt;
  return body;
}

std::string MultiOutputStreamOp(const HloInstruction& instr, const OpContext& c, LoweredOp& op,
                                const VpuBody& body, const std::vector<uint64_t>& outputs) {
  const std::vector<hlo::Shape>& shapes = instr.shape().tuple_shapes;
  VpuStream st;
  st.tag = instr.name();
  for (const HloInstruction* in : body.inputs) {
    st.inputs.push_back(Operand(in, c));
    st.inputs.back().splat = IsF32Scalar(in->shape());
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    StreamOperand out{outputs[k], ElemBytes(shapes[k]), ByteSize(shapes[k])};
    if (k == 0) {
      st.output = out, st.result = body.results[0];
    } else {
      st.more_outputs.push_back(out), st.more_results.push_back(body.results[k]);
    }
  }
  st.vregs = std::max<int64_t>(1, (Elements(shapes[0]) + kVregElements - 1) / kVregElements);
  st.prologue = body.prologue, st.body = body.body;
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = 0;
  for (const StreamOperand& o : st.inputs) op.hbm_bytes += o.bytes;
  for (size_t k = 0; k < outputs.size(); ++k) op.hbm_bytes += ByteSize(shapes[k]);
  st.vmem_bytes = c.vmem_limit;
  op.vmem_bytes = VpuStreamVmemBytes(st);
  std::string k = VpuStreamKernel(st);
  // As kStreamOutputFence, each buffer's credits one per output.
  const std::string n = std::to_string(outputs.size());
  k.insert(k.find('\n', k.find(".tag")) + 1,
           "    sflag f0, 0\n    sflag f1, 0\n    sflag f2, 0\n    sflag f3, 0\n");
  return k + "    sflag f15, 0\n    signal vpu, f15, 1\n    wait seq, f15, 1\n    wait seq, f4, " +
         n + "\n    wait seq, f5, " + n + "\n";
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
