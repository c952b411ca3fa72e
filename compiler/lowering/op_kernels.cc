#include "compiler/lowering/op_kernels.h"

#include <algorithm>
#include <optional>

#include "compiler/hlo/opcode.h"
#include "compiler/lowering/asm_util.h"
#include "compiler/lowering/batch_norm_kernel.h"
#include "compiler/lowering/conv_select.h"
#include "compiler/lowering/dynamic_slice_kernel.h"
#include "compiler/lowering/exact_dot_op.h"
#include "compiler/lowering/gather_kernel.h"
#include "compiler/lowering/line_reduce_kernel.h"
#include "compiler/lowering/move_ops.h"
#include "compiler/lowering/mxu_ops.h"
#include "compiler/lowering/pool_grad_kernel.h"
#include "compiler/lowering/pool_kernel.h"
#include "compiler/lowering/rng_kernel.h"
#include "compiler/lowering/scatter_kernel.h"
#include "compiler/lowering/sort_kernel.h"
#include "compiler/lowering/tile_ops.h"
#include "compiler/lowering/vpu_body.h"
#include "compiler/lowering/vpu_stream.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::OpCategory;
using hlo::Opcode;

// Elements of `s` (a tuple: all leaves).
int64_t Elements(const hlo::Shape& s) {
  if (!s.IsTuple()) return s.ElementCount();
  int64_t n = 0;
  for (const hlo::Shape& t : s.tuple_shapes) n += Elements(t);
  return n;
}

int ElemBytes(const hlo::Shape& s) {
  const hlo::Shape* leaf = &s;
  while (leaf->IsTuple() && !leaf->tuple_shapes.empty()) leaf = &leaf->tuple_shapes[0];
  return std::max(1, hlo::PrimitiveTypeBits(leaf->type) / 8);
}

const HloInstruction* FusedContraction(const HloInstruction& fusion) {
  if (!fusion.fused_computation()) return nullptr;
  for (const auto& i : fusion.fused_computation()->instructions())
    if (i->opcode() == Opcode::kDot || i->opcode() == Opcode::kConvolution) return i.get();
  return nullptr;
}

bool IsF32Scalar(const hlo::Shape& s) {
  return s.IsArray() && s.dims.empty() && s.type == hlo::PrimitiveType::kF32;
}

StreamOperand Operand(const HloInstruction* v, const OpContext& c) {
  return StreamOperand{c.address(v), ElemBytes(v->shape()), ByteSize(v->shape())};
}

std::string Stream(const HloInstruction& instr, const OpContext& c, LoweredOp& op,
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

bool AllFullSize(const VpuBody& b, const HloInstruction& instr) {
  if (!FloatOrBf16(instr.shape()) || instr.shape().ElementCount() % kVregElements) return false;
  return std::all_of(b.inputs.begin(), b.inputs.end(), [&](const HloInstruction* in) {
    return IsF32Scalar(in->shape()) ||  // splat into its vreg (vpu_stream.h)
           ((FloatOrBf16(in->shape()) || in->shape().type == hlo::PrimitiveType::kS32 ||
             in->shape().type == hlo::PrimitiveType::kU32) &&
            in->shape().ElementCount() == instr.shape().ElementCount());
  });
}

std::string Mxu(MxuWork w, const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  op.kind = KernelKind::kMxu;
  op.flops = w.flops;
  std::string k = MxuKernel(w, c.address(instr.operand(0)), c.address(instr.operand(1)),
                            c.address(&instr), instr.name(), c.mxus);
  op.exact = w.exact;
  op.note = w.note;
  op.hbm_bytes = static_cast<uint64_t>(w.batch * (w.m * w.k * 2 + w.k * w.n * 2 + w.m * w.n * 4));
  if (op.exact) {  // wait for the last result copies (see kStreamOutputFence): the MXUs'
    // output credits f6, f7 (matmul_kernel.cc) are back once they land
    k += "    sflag f15, 0\n";
    for (int m = 0; m < c.mxus; ++m) k += "    signal mxu" + std::to_string(m) + ", f15, 1\n";
    k += "    wait seq, f15, " + std::to_string(c.mxus) +
         "\n    wait seq, f6, 1\n    wait seq, f7, 1\n";
  }
  return k;
}

// After an exact VPU stream: the sequencer waits until its last results have reached HBM.
// A `signal dma` (the drain barrier) does not wait for copies still in flight, so the next
// kernel could read a result before it lands. The stream's output credits (f4, f5; one per
// buffer, vpu_stream.cc) are back once its copies are done; f15 (used by no kernel, reset
// first) says the VPU is past its last wait for one.
constexpr const char* kStreamOutputFence =
    "    sflag f15, 0\n    signal vpu, f15, 1\n    wait seq, f15, 1\n    wait seq, f4, 1\n"
    "    wait seq, f5, 1\n";

// Every user of `instr` is an elementwise op or loop fusion, which inlines it (vpu_body.h);
// it is not a result of the computation.
bool UsersRecompute(const HloInstruction& instr) {
  const hlo::HloComputation* parent = instr.parent();
  if (!parent || parent->root() == &instr) return false;
  for (const auto& u : parent->instructions()) {
    const auto& ops = u->operands();
    if (std::find(ops.begin(), ops.end(), &instr) == ops.end()) continue;
    const OpCategory cat = hlo::GetOpcodeInfo(u->opcode()).category;
    const bool elementwise = cat == OpCategory::kElementwiseUnary ||
                             cat == OpCategory::kElementwiseBinary ||
                             cat == OpCategory::kElementwiseTernary;
    if (!elementwise && (u->opcode() != Opcode::kFusion || FusedContraction(*u))) return false;
  }
  return true;
}

// A 2-D convolution in NHWC form (any kernel layout) on the implicit-GEMM kernel of
// conv_kernel.h; empty when the shape is not one it takes (conv_select.h).
std::string ConvolutionKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  const ConvPlacement at{c.mxus};
  std::optional<ConvShape> shape = ConvShapeOf(instr, at);
  if (!shape) return "";
  ConvShape& s = *shape;
  s.input = c.address(instr.operand(0)), s.kernel = c.address(instr.operand(1));
  s.output = c.address(&instr);
  s.tag = instr.name();
  std::string k;
  try {
    k = ConvKernel(s);
  } catch (const std::invalid_argument&) {
    return "";  // the GEMM fallback takes it
  }
  op.kind = KernelKind::kMxu;
  op.flops = static_cast<double>(ConvFlops(s));
  const int64_t oh = ConvOutputSize(s), ow = (s.w + s.pad_lo + s.pad_hi - s.kw) / s.stride + 1;
  const int64_t in_elem = s.input_f32 ? 4 : 2, ker_elem = s.kernel_f32 ? 4 : 2;
  const int64_t out_elem = s.output_bf16 ? 2 : 4;
  op.hbm_bytes =
      static_cast<uint64_t>(s.batch * (s.h * s.w * s.cin * in_elem + oh * ow * s.cout * out_elem) +
                            s.kh * s.kw * s.cin * s.cout * ker_elem);
  op.exact = ConvKernelIsExact(instr);
  const std::string& labels = instr.conv_dims()->labels;
  if (labels != "b01f_01io->b01f" && !s.kernel_oi)
    op.note = "kernel layout " + labels + ": timing of the 01io form";
  return k;
}

// A weight gradient (`f01b_i01o->01bf`, window = the output gradient's size, f32 operands,
// DEFAULT precision) on the kernel of conv_wgrad.h; empty when it does not take it.
std::string WeightGrad(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  std::optional<WeightGradShape> shape = WeightGradShapeOf(instr, {c.mxus});
  if (!shape) return "";
  WeightGradShape& s = *shape;
  s.x = c.address(instr.operand(0)), s.dy = c.address(instr.operand(1)), s.dw = c.address(&instr);
  s.tag = instr.name();
  std::string k;
  try {
    k = WeightGradKernel(s);
  } catch (const std::invalid_argument&) {
    return "";
  }
  op.kind = KernelKind::kMxu;
  const std::vector<int64_t>& taps = instr.shape().dims;  // dW: [kh, kw, cin, cout]
  op.flops = 2.0 * s.batch * s.ho * s.wo * taps[0] * taps[1] * s.cin * s.cout;
  const hlo::Shape &x = instr.operand(0)->shape(), &dy = instr.operand(1)->shape();
  op.hbm_bytes = ByteSize(x) + ByteSize(dy) + ByteSize(instr.shape());
  op.exact = true;
  return k;
}

}  // namespace

bool IsWord32(const hlo::Shape& s) {
  return s.IsArray() && (s.type == hlo::PrimitiveType::kF32 || s.type == hlo::PrimitiveType::kS32 ||
                         s.type == hlo::PrimitiveType::kU32);
}

uint64_t ByteSize(const hlo::Shape& shape) {
  if (shape.IsTuple()) {
    uint64_t n = 0;
    for (const hlo::Shape& t : shape.tuple_shapes) n += ByteSize(t);
    return n;
  }
  return static_cast<uint64_t>(shape.ElementCount()) * ElemBytes(shape);
}

bool DefinesNoBuffer(const HloInstruction& i) {
  switch (i.opcode()) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
    case Opcode::kReshape:
      return true;
    default:
      return false;
  }
}

std::string OpKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  const Opcode code = instr.opcode();
  const OpCategory cat = hlo::GetOpcodeInfo(code).category;
  if (DefinesNoBuffer(instr)) {
    op.exact = true;
    return "";
  }
  switch (code) {
    case Opcode::kDot: {  // the tiled MXU kernel when it is exact, else the packing one
      std::string k = Mxu(DotWork(instr), instr, c, op);
      if (!op.exact)
        if (std::string e = ExactDotOp(instr, c, op); !e.empty()) return op.note.clear(), e;
      return k;
    }
    case Opcode::kConvolution:
      if (std::string k = WeightGrad(instr, c, op); !k.empty()) return k;
      if (std::string k = ConvolutionKernel(instr, c, op); !k.empty()) return k;
      return Mxu(ConvolutionWork(instr), instr, c, op);
    case Opcode::kFusion:
      // MXU work, then the epilogue, timing only: reached only when lowering runs without the
      // pipeline, whose contraction-defusion pass inlines these fusions.
      if (const HloInstruction* mm = FusedContraction(instr)) {
        MxuWork w = mm->opcode() == Opcode::kDot ? DotWork(*mm) : ConvolutionWork(*mm);
        std::string k = Mxu(w, instr, c, op);
        LoweredOp epilogue;
        k += Stream(instr, c, epilogue, {&instr}, nullptr, 2);
        op.note += (op.note.empty() ? "" : "; ") + std::string("fused epilogue on the VPU");
        op.exact = false;
        return k;
      }
      [[fallthrough]];
    default:
      break;
  }
  if (code == Opcode::kFusion)  // XLA's kInput fusion: a reduce of elementwise producers
    if (std::string r = LineReduceKernel(instr, c, op); !r.empty()) return r;
  if (InlinedIntoUsers(instr) && UsersRecompute(instr)) {
    op.exact = true;
    op.note = "pred: recomputed inside each user (the VPU stores 32-bit elements)";
    return "";
  }
  if (cat == OpCategory::kElementwiseUnary || cat == OpCategory::kElementwiseBinary ||
      cat == OpCategory::kElementwiseTernary || code == Opcode::kFusion) {
    VpuBody body = BuildVpuBody(instr);
    std::string k = Stream(instr, c, op, body.inputs, &body, 0);
    op.exact = body.exact && AllFullSize(body, instr) && body.inputs.size() <= 6;
    if (!op.exact)  // broadcast operands or ragged sizes: the tiled kernel computes them
      if (std::string t = TileOpKernel(instr, c, op); !t.empty()) return t;
    if (!op.exact) return k;
    // The stream counts its buffers' flags from zero (a tiled matmul leaves f2, f3 set), and
    // its results must be in HBM before the next kernel reads them.
    k.insert(k.find('\n', k.find(".tag")) + 1,
             "    sflag f0, 0\n    sflag f1, 0\n    sflag f2, 0\n    sflag f3, 0\n");
    return k + kStreamOutputFence;
  }
  if (code == Opcode::kReduce || code == Opcode::kBroadcast || code == Opcode::kIota)
    if (std::string t = TileOpKernel(instr, c, op); !t.empty()) return t;
  if (std::string r = LineReduceKernel(instr, c, op); !r.empty()) return r;
  if (std::string b = BatchNormKernel(instr, c, op); !b.empty()) return b;
  if (std::string p = ReduceWindowKernel(instr, c, op); !p.empty()) return p;
  if (std::string g = MaxPoolGradKernel(instr, c, op); !g.empty()) return g;
  if (std::string m = MoveOpKernel(instr, c, op); !m.empty()) return m;
  if (std::string g = GatherKernel(instr, c, op); !g.empty()) return g;
  if (std::string s = ScatterKernel(instr, c, op); !s.empty()) return s;
  if (std::string d = DynamicSliceKernel(instr, c, op); !d.empty()) return d;
  if (std::string k = SortKernel(instr, c, op); !k.empty()) return k;
  if (std::string k = RngKernel(instr, c, c.rng_seed, op); !k.empty()) return k;
  switch (cat) {
    case OpCategory::kReduction:
    case OpCategory::kNormalization:
      return Stream(instr, c, op, {instr.operands().begin(), instr.operands().end()}, nullptr,
                    VpuOpsPerVreg(instr));
    case OpCategory::kSource:
    case OpCategory::kDataMovement:
      if (code == Opcode::kSort)
        return Stream(instr, c, op, {instr.operands().begin(), instr.operands().end()}, nullptr,
                      VpuOpsPerVreg(instr));
      if (code == Opcode::kBroadcast || code == Opcode::kIota || code == Opcode::kRng ||
          code == Opcode::kRngBitGenerator) {
        VpuBody fill;
        fill.body = {"vmovi v6, 0.0"}, fill.result = 6;
        for (const HloInstruction* o : instr.operands()) fill.inputs.push_back(o);
        fill.inputs.resize(std::min<size_t>(fill.inputs.size(), 6));
        return Stream(instr, c, op, fill.inputs, &fill, 0);
      }
      {
        const bool update = code == Opcode::kDynamicUpdateSlice || code == Opcode::kScatter;
        const HloInstruction* moved =
            update ? instr.operand(code == Opcode::kScatter ? 2 : 1) : &instr;
        const uint64_t bytes = std::max<uint64_t>(ByteSize(moved->shape()), 512);
        op.kind = KernelKind::kDma;
        op.hbm_bytes = 2 * bytes;
        return DmaCopyKernel(c.address(instr.operand(0)), c.address(&instr), bytes, instr.name());
      }
    default:
      throw std::invalid_argument("no kernel for this op on the TensorCore");
  }
}

}  // namespace tpusim::lowering
