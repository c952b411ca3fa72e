#include "compiler/lowering/sort_kernel.h"

#include <optional>
#include <sstream>

#include "compiler/lowering/asm_util.h"
#include "compiler/lowering/data_parallel.h"
#include "compiler/lowering/sort_network.h"
#include "compiler/lowering/tuple_results.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using hlo::PrimitiveType;

constexpr int64_t kVregBytes = 4096;
constexpr int64_t kVmemVregs = 4096;      // 16 MiB of VMEM (sim/configs: vmem_bytes)
constexpr int64_t kSlots = 1024;          // lines sorted at once: the elements of a vreg
constexpr int kInput = 21, kOutput = 25;  // r21..: operand pointers, r25..: result pointers
constexpr int kGroup = 29, kGroups = 30;  // the group loop

struct Comparator {
  size_t key = 0;
  bool descending = false;
};

// compare(p[2k], p[2k+1]) LT or GT, or the same with the parameters swapped.
std::optional<Comparator> ComparatorOf(const hlo::HloComputation* f) {
  if (!f || f->root()->opcode() != Opcode::kCompare) return std::nullopt;
  const HloInstruction *l = f->root()->operand(0), *r = f->root()->operand(1);
  if (l->opcode() != Opcode::kParameter || r->opcode() != Opcode::kParameter) return std::nullopt;
  const int64_t p = l->parameter_number(), q = r->parameter_number();
  const std::string dir = f->root()->GetWord("direction").value_or("");
  if ((dir != "LT" && dir != "GT") || p / 2 != q / 2 || p == q) return std::nullopt;
  return Comparator{static_cast<size_t>(p / 2), (dir == "GT") == (p % 2 == 0)};
}

bool Is32Bit(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kS32 || t == PrimitiveType::kU32;
}

struct Sort {
  int64_t rows = 0, n = 0, length = 0;  // lines, their elements, padded to a power of two
  std::vector<uint64_t> inputs;
  std::vector<std::optional<uint64_t>> outputs;  // nullopt: nothing reads that result
  SortNetworkPlan plan;
  uint32_t pad_key = 0;  // bits of a key that sorts after every other
};

class Emitter {
 public:
  explicit Emitter(const Sort& s) : s_(s) {}

  std::string Run() {
    std::ostringstream o;
    o << "# sort " << s_.rows << " lines of " << s_.n << " (network of " << s_.length << ")\n";
    for (int f = 0; f < 4; ++f) o << "    sflag f" << f << ", 0\n";
    for (size_t x = 0; x < s_.inputs.size(); ++x) o << LoadAddress(kInput + x, s_.inputs[x], 2);
    for (size_t x = 0; x < s_.outputs.size(); ++x)
      if (s_.outputs[x]) o << LoadAddress(kOutput + x, *s_.outputs[x], 2);
    const int64_t full = s_.rows / kSlots, tail = s_.rows % kSlots;
    if (full > 0) {
      o << "    li r" << kGroup << ", 0\n    li r" << kGroups << ", " << full << "\ngroup:\n"
        << Group(kSlots, "full") << "    addi r" << kGroup << ", r" << kGroup << ", 1\n    blt r"
        << kGroup << ", r" << kGroups << ", group\n";
    }
    if (tail > 0) o << Group(tail, "tail");
    o << "    signal dma, f3, 1\n    wait seq, f3, 1\n";
    return head_.str() + o.str();
  }

 private:
  // One group of `lines` lines: fill the index and padding, fetch, sort, write back, and
  // advance the HBM pointers.
  std::string Group(int64_t lines, const std::string& name) {
    std::ostringstream o;
    const int64_t line_bytes = s_.n * 4, arrays = static_cast<int64_t>(s_.plan.arrays.size());
    head_ << ".desc " << name << "_in rows=" << s_.n
          << " row_bytes=4 src_stride=4 dst_stride=" << kVregBytes << " planes=" << lines
          << " src_plane_stride=" << line_bytes << " dst_plane_stride=4\n.desc " << name
          << "_out rows=" << s_.n << " row_bytes=4 src_stride=" << kVregBytes
          << " dst_stride=4 planes=" << lines
          << " src_plane_stride=4 dst_plane_stride=" << line_bytes << "\n";
    o << "    vmovi v16, 0.0\n    vmovi v17, 1.0\n    li r1, " << s_.plan.arrays[arrays - 1]
      << "\n    li r3, " << s_.length << "\n    vloop r3, 2\n    vsts v16, r1, 4096\n"
      << "    vadd v16, v16, v17\n";
    if (s_.length > s_.n)
      o << "    vmovi v18, f32:0x" << std::hex << s_.pad_key << std::dec << "\n    li r1, "
        << s_.plan.arrays[s_.plan.key] + s_.n * kVregBytes << "\n    li r3, " << s_.length - s_.n
        << "\n    vloop r3, 1\n    vsts v18, r1, 4096\n";
    for (size_t x = 0; x < s_.inputs.size(); ++x)
      o << "    li r1, " << s_.plan.arrays[x] << "\n    dma.hv r1, r" << kInput + x << ", " << name
        << "_in, f0\n";
    o << "    wait vpu, f0, " << s_.inputs.size() << "\n";
    SortNetworkPlan plan = s_.plan;
    plan.labels = name + "_";
    o << SortNetwork(plan) << "    signal vpu, f1, 1\n    wait dma, f1, 1\n";
    int written = 0;
    for (size_t x = 0; x < s_.outputs.size(); ++x) {
      if (s_.outputs[x])
        o << "    li r1, " << s_.plan.arrays[x] << "\n    dma.vh r" << kOutput + x << ", r1, "
          << name << "_out, f2\n",
            ++written;
      o << "    addi r" << kInput + x << ", r" << kInput + x << ", " << lines * line_bytes << "\n";
      if (s_.outputs[x])
        o << "    addi r" << kOutput + x << ", r" << kOutput + x << ", " << lines * line_bytes
          << "\n";
    }
    // The next group's fetch overwrites what these copies read.
    if (written > 0) o << "    wait dma, f2, " << written << "\n";
    return o.str();
  }

  const Sort& s_;
  std::ostringstream head_;
};

}  // namespace

std::string SortKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  if (instr.opcode() != Opcode::kSort || instr.operand_count() == 0 || !instr.dimensions() ||
      instr.dimensions()->size() != 1)
    return "";
  const hlo::Shape& x = instr.operand(0)->shape();
  const std::optional<Comparator> cmp = ComparatorOf(instr.to_apply());
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (!cmp || rank == 0 || (*instr.dimensions())[0] != rank - 1 ||
      cmp->key >= instr.operand_count())
    return "";
  for (const HloInstruction* o : instr.operands())
    if (!o->shape().IsArray() || !Is32Bit(o->shape().type) || o->shape().dims != x.dims ||
        o->opcode() == Opcode::kConstant)  // constants have no HBM buffer
      return "";
  const PrimitiveType key = instr.operand(cmp->key)->shape().type;
  if (key != PrimitiveType::kF32 && key != PrimitiveType::kS32) return "";
  Sort s;
  s.n = x.dims.back();
  s.rows = x.ElementCount() / std::max<int64_t>(s.n, 1);
  if (c.split > 0 && HasDim(x, c.split)) {
    if (rank < 2 || x.dims[0] != c.split) return "";
    s.rows /= c.cores;
  }
  s.length = 2;
  while (s.length < s.n) s.length *= 2;
  const int64_t arrays = static_cast<int64_t>(instr.operand_count()) + 1;
  if (s.n <= 0 || s.rows <= 0 || arrays > static_cast<int64_t>(kSortMaxArrays) ||
      arrays * s.length > kVmemVregs || s.rows * s.n * 4 > (int64_t{1} << 31))
    return "";
  if (!TupleResultAddresses(instr, c, s.outputs)) return "";
  for (const HloInstruction* o : instr.operands()) s.inputs.push_back(c.address(o));
  for (int64_t a = 0; a < arrays; ++a)
    s.plan.arrays.push_back(static_cast<uint64_t>(a * s.length * kVregBytes));
  s.plan.length = s.length, s.plan.key = cmp->key, s.plan.descending = cmp->descending;
  s.plan.s32 = key == PrimitiveType::kS32;
  s.pad_key = s.plan.s32 ? (cmp->descending ? 0x80000000u : 0x7fffffffu)
                         : (cmp->descending ? 0xff800000u : 0x7f800000u);
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = 2 * static_cast<uint64_t>(s.rows * s.n * 4 * (arrays - 1));
  op.exact = true;
  return ".tag \"" + instr.name() + "\"\n" + Emitter(s).Run();
}

}  // namespace tpusim::lowering
