#include "compiler/lowering/sort/sort_kernel.h"

#include <optional>
#include <sstream>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/buffers/tuple_results.h"
#include "compiler/lowering/sort/sort_network.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using hlo::PrimitiveType;

constexpr int64_t kVregBytes = 4096;
constexpr int64_t kVmemVregs = 4096;      // 16 MiB of VMEM (sim/configs: vmem_bytes)
constexpr int64_t kSlots = 1024;          // lines sorted at once, one lane: a vreg's elements
constexpr int64_t kSortSublanes = 8;      // lines sorted at once, 128 lanes: a vreg's sublanes
constexpr int kInput = 21, kOutput = 25;  // r21..: operand pointers, r25..: result pointers
constexpr int kGroup = 29, kGroups = 30;  // the group loop

struct Comparator {
  size_t key = 0;
  bool descending = false;
  bool total_order = false;  // type=TOTALORDER (JAX's comparators): f32 keys as s32 keys
};

// compare(p[2k], p[2k+1]) LT or GT, or the same with the parameters swapped.
std::optional<Comparator> ComparatorOf(const hlo::HloComputation* f) {
  if (!f || f->root()->opcode() != Opcode::kCompare) return std::nullopt;
  const HloInstruction *l = f->root()->operand(0), *r = f->root()->operand(1);
  if (l->opcode() != Opcode::kParameter || r->opcode() != Opcode::kParameter) return std::nullopt;
  const int64_t p = l->parameter_number(), q = r->parameter_number();
  const std::string dir = f->root()->GetWord("direction").value_or("");
  if ((dir != "LT" && dir != "GT") || p / 2 != q / 2 || p == q) return std::nullopt;
  return Comparator{static_cast<size_t>(p / 2), (dir == "GT") == (p % 2 == 0),
                    f->root()->GetWord("type").value_or("") == "TOTALORDER"};
}

bool Is32Bit(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kS32 || t == PrimitiveType::kU32;
}

struct Sort {
  int64_t rows = 0, n = 0, group = 0;  // lines, their elements, lines sorted at once
  bool total_order = false;            // f32 keys turned into total-order s32 keys and back in VMEM
  std::vector<uint64_t> inputs;
  std::vector<std::optional<uint64_t>> outputs;  // nullopt: nothing reads that result
  SortNetworkPlan plan;
  uint32_t pad_key = 0;  // bits of a key that sorts after every other
  int64_t vregs() const { return plan.length / plan.lanes; }  // per array
};

// A copy between a group's lines in HBM (line_bytes apart) and an array in VMEM.
struct Piece {
  int64_t hbm = 0, vmem = 0;  // byte offsets of the first element
  std::string shape;          // descriptor fields, HBM -> VMEM
  std::string back;           // the same, VMEM -> HBM
};

class Emitter {
 public:
  explicit Emitter(const Sort& s) : s_(s) {}

  std::string Run() {
    std::ostringstream o;
    o << "# sort " << s_.rows << " lines of " << s_.n << " (network of " << s_.plan.length << ", "
      << s_.plan.lanes << " lane(s) per line)\n";
    for (int f = 0; f < 6; ++f) o << "    sflag f" << f << ", " << (f == 2 ? Written() : 0) << "\n";
    if (s_.plan.lanes > 1)
      o << SortLaneTables(s_.plan.lane_tables, s_.plan.lane_tables + kTables * kVregBytes, 5);
    for (size_t x = 0; x < s_.inputs.size(); ++x)
      o << assembly::LoadAddress(kInput + x, s_.inputs[x], 2);
    for (size_t x = 0; x < s_.outputs.size(); ++x)
      if (s_.outputs[x]) o << assembly::LoadAddress(kOutput + x, *s_.outputs[x], 2);
    const int64_t full = s_.rows / s_.group, tail = s_.rows % s_.group;
    if (full > 0) {
      o << "    li r" << kGroup << ", 0\n    li r" << kGroups << ", " << full << "\ngroup:\n"
        << Group(s_.group, "full") << "    addi r" << kGroup << ", r" << kGroup << ", 1\n    blt r"
        << kGroup << ", r" << kGroups << ", group\n";
    }
    if (tail > 0) o << Group(tail, "tail");
    // Once the VPU is past its last wait, f2 counts the last group's copies as they land.
    o << "    signal vpu, f3, 1\n    wait seq, f3, 1\n    wait seq, f2, " << Written() << "\n";
    return head_.str() + o.str();
  }

  static constexpr int64_t kTables = 22;  // SortLaneTables' vregs, then its scratch

 private:
  int Written() const {
    int w = 0;
    for (const auto& o : s_.outputs) w += o.has_value();
    return w;
  }

  // The copies of `lines` lines: one element per row into consecutive vregs (1 lane), or
  // runs of 128 elements into consecutive vregs and the ragged rest (128 lanes).
  std::vector<Piece> Pieces(int64_t lines) const {
    const int64_t line_bytes = s_.n * 4;
    auto fields = [&](int64_t rows, int64_t row_bytes, int64_t src, int64_t dst, int64_t psrc,
                      int64_t pdst) {
      return "rows=" + std::to_string(rows) + " row_bytes=" + std::to_string(row_bytes) +
             " src_stride=" + std::to_string(src) + " dst_stride=" + std::to_string(dst) +
             " planes=" + std::to_string(lines) + " src_plane_stride=" + std::to_string(psrc) +
             " dst_plane_stride=" + std::to_string(pdst);
    };
    std::vector<Piece> out;
    if (s_.plan.lanes == 1) {
      out.push_back({0, 0, fields(s_.n, 4, 4, kVregBytes, line_bytes, 4),
                     fields(s_.n, 4, kVregBytes, 4, 4, line_bytes)});
      return out;
    }
    const int64_t runs = s_.n / kSortLanes, rest = s_.n % kSortLanes, run = kSortLanes * 4;
    if (runs > 0)
      out.push_back({0, 0, fields(runs, run, run, kVregBytes, line_bytes, run),
                     fields(runs, run, kVregBytes, run, run, line_bytes)});
    if (rest > 0)
      out.push_back({runs * run, runs * kVregBytes, fields(1, rest * 4, 0, 0, line_bytes, run),
                     fields(1, rest * 4, 0, 0, run, line_bytes)});
    return out;
  }

  // The index array (each element's position as f32) and the padding keys: with one lane,
  // the vregs past the line; with 128, the whole key array before the operands arrive.
  std::string Fill() const {
    std::ostringstream o;
    const SortNetworkPlan& p = s_.plan;
    const uint64_t index = p.arrays.back(), key = p.arrays[p.key];
    if (p.lanes == 1)
      o << "    vmovi v16, 0.0\n    vmovi v17, 1.0\n";
    else
      o << "    li r1, " << p.lane_tables + 21 * kVregBytes << "\n    vld v16, r1\n"
        << "    vmovi v17, 128.0\n";
    o << "    li r1, " << index << "\n    li r3, " << s_.vregs()
      << "\n    vloop r3, 2\n    vsts v16, r1, 4096\n    vadd v16, v16, v17\n";
    const int64_t from = p.lanes == 1 ? s_.n : 0;
    if (s_.vregs() > from)
      o << "    vmovi v18, f32:0x" << std::hex << s_.pad_key << std::dec << "\n    li r1, "
        << key + from * kVregBytes << "\n    li r3, " << s_.vregs() - from
        << "\n    vloop r3, 1\n    vsts v18, r1, 4096\n";
    return o.str();
  }

  // Total order: every key vreg through x ^ ((x >> 31) & 0x7fffffff), its own inverse
  // (vpu_math.h's TotalOrderKey), before the network and after it.
  std::string KeyTransform() const {
    if (!s_.total_order) return "";
    std::ostringstream o;
    o << "    vmovi v1, f32:0x1f\n    vmovi v2, f32:0x7fffffff\n    li r1, "
      << s_.plan.arrays[s_.plan.key] << "\n    li r3, " << s_.vregs()
      << "\n    vloop r3, 5\n    vlds v0, r1, 4096\n    vshra.s32 v3, v0, v1\n"
      << "    vand.u32 v3, v3, v2\n    vxor.u32 v0, v0, v3\n    vsts v0, r1, 4096\n";
    return o.str();
  }

  // One group of `lines` lines: wait until the last group's results left, fill, fetch,
  // sort, write back, and advance the HBM pointers.
  std::string Group(int64_t lines, const std::string& name) {
    std::ostringstream o;
    const std::vector<Piece> pieces = Pieces(lines);
    for (size_t k = 0; k < pieces.size(); ++k)
      head_ << ".desc " << name << "_in" << k << " " << pieces[k].shape << "\n.desc " << name
            << "_out" << k << " " << pieces[k].back << "\n";
    o << "    wait vpu, f2, " << Written() << "\n"
      << Fill() << "    signal vpu, f4, 1\n    wait dma, f4, 1\n";
    for (size_t x = 0; x < s_.inputs.size(); ++x)
      for (size_t k = 0; k < pieces.size(); ++k)
        o << "    li r1, " << s_.plan.arrays[x] + pieces[k].vmem << "\n    addi r2, r" << kInput + x
          << ", " << pieces[k].hbm << "\n    dma.hv r1, r2, " << name << "_in" << k << ", f0\n";
    o << "    wait vpu, f0, " << s_.inputs.size() * pieces.size() << "\n";
    SortNetworkPlan plan = s_.plan;
    plan.labels = name + "_";
    o << KeyTransform() << SortNetwork(plan) << KeyTransform()
      << "    signal vpu, f1, 1\n    wait dma, f1, 1\n";
    const int64_t advance = lines * s_.n * 4;
    for (size_t x = 0; x < s_.outputs.size(); ++x) {
      if (s_.outputs[x]) {
        for (size_t k = 0; k < pieces.size(); ++k)
          o << "    li r1, " << s_.plan.arrays[x] + pieces[k].vmem << "\n    addi r2, r"
            << kOutput + x << ", " << pieces[k].hbm << "\n    dma.vh r2, r1, " << name << "_out"
            << k << ", f1\n";
        o << "    addi r" << kOutput + x << ", r" << kOutput + x << ", " << advance << "\n";
      }
      o << "    addi r" << kInput + x << ", r" << kInput + x << ", " << advance << "\n";
    }
    // f2 gains one per result once all its pieces have landed.
    o << "    wait dma, f1, " << Written() * pieces.size() << "\n";
    if (Written() > 0) o << "    signal dma, f2, " << Written() << "\n";
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
  const int64_t arrays = static_cast<int64_t>(instr.operand_count()) + 1;
  if (s.n <= 0 || s.rows <= 0 || arrays > static_cast<int64_t>(kSortMaxArrays) ||
      s.rows * s.n * 4 > (int64_t{1} << 31))
    return "";
  if (!TupleResultAddresses(instr, c, s.outputs)) return "";
  for (const HloInstruction* o : instr.operands()) s.inputs.push_back(c.address(o));
  s.plan.key = cmp->key, s.plan.descending = cmp->descending;
  s.total_order = cmp->total_order && key == PrimitiveType::kF32;
  s.plan.s32 = key == PrimitiveType::kS32 || s.total_order;
  s.pad_key = s.plan.s32 ? (cmp->descending ? 0x80000000u : 0x7fffffffu)
                         : (cmp->descending ? 0xff800000u : 0x7f800000u);
  if (s.total_order && cmp->descending) s.pad_key = 0xffffffffu;  // INT32_MIN once transformed
  // Each layout that fits VMEM; the one with less VPU work over all groups.
  int64_t best = -1;
  const Sort base = s;
  for (int64_t lanes : {int64_t{1}, kSortLanes}) {
    Sort t = base;
    t.plan.lanes = lanes, t.group = lanes == 1 ? kSlots : kSortSublanes;
    t.plan.length = lanes;
    while (t.plan.length < std::max<int64_t>(t.n, 2)) t.plan.length *= 2;
    const int64_t vregs = t.vregs(), extra = lanes == 1 ? 0 : Emitter::kTables + 129;
    if (arrays * vregs + extra > kVmemVregs) continue;
    for (int64_t a = 0; a < arrays; ++a)
      t.plan.arrays.push_back(static_cast<uint64_t>(a * vregs * kVregBytes));
    t.plan.lane_tables = static_cast<uint64_t>(arrays * vregs * kVregBytes);
    const int64_t cost = (t.rows + t.group - 1) / t.group * SortNetworkInstructions(t.plan);
    if (best < 0 || cost < best) best = cost, s = t;
  }
  if (best < 0) return "";
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = 2 * static_cast<uint64_t>(s.rows * s.n * 4 * (arrays - 1));
  op.exact = true;
  return ".tag \"" + instr.name() + "\"\n" + Emitter(s).Run();
}

}  // namespace tpusim::lowering
