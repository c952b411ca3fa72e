#include "compiler/lowering/rng/rng_kernel.h"

#include <bit>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"
#include "compiler/eval/counter_rng.h"
#include "compiler/lowering/buffers/tuple_results.h"
#include "compiler/lowering/vpu/vpu_math.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using hlo::PrimitiveType;

constexpr int64_t kVregBytes = 4096, kVregElems = 1024;
constexpr int64_t kChunkVregs = 128;                          // 512 KiB per staging buffer
constexpr uint64_t kBuffers = 0;                              // two staging buffers
constexpr uint64_t kCounters = 2 * kChunkVregs * kVregBytes;  // 128 vregs: vreg k all k
constexpr uint64_t kLaneIota = kCounters + 136 * kVregBytes;  // lane l holds l
constexpr uint64_t kSublaneBase = kLaneIota + kVregBytes;     // sublane s holds 128 s
constexpr uint64_t kStateWord = kSublaneBase + kVregBytes;    // the new state's words
constexpr int kOut = 20, kPair = 21, kPairs = 22;             // scalar registers
constexpr int kMaxStateElements = 64;                         // SMEM words read for the key

std::string Bits(uint32_t bits) {
  char b[24];
  std::snprintf(b, sizeof b, "f32:0x%08x", bits);
  return b;
}
std::string Bits(float f) { return Bits(std::bit_cast<uint32_t>(f)); }

struct Rng {
  int64_t elements = 0;
  uint64_t output = 0;
  std::optional<uint64_t> key;        // a compile-time key (rng); else computed from the state
  std::optional<float> low, high;     // RNG_UNIFORM's bounds (else raw bits)
  std::optional<float> mean, stddev;  // RNG_NORMAL's
  uint64_t state = 0, new_state = 0, seed = 0;
  int64_t state_elements = 0;
  bool state_64 = false, writes_state = false;
};

class Emitter {
 public:
  explicit Emitter(const Rng& r) : r_(r) {
    if (r_.mean) NormalBody();
  }

  std::string Run() {
    s_ << "# counter-based random "
       << (r_.low    ? "uniform f32"
           : r_.mean ? "normal f32"
                     : "bits")
       << ", " << r_.elements << " elements\n";
    for (int f = 0; f < 13; ++f) s_ << "    sflag f" << f << ", " << (f == 4 || f == 5) << "\n";
    SlotCounters();
    Key();
    Constants();
    Chunks();
    // Once the VPU is past its last wait, f4 and f5 come back as the last copies land.
    s_ << "    signal vpu, f12, 1\n    wait seq, f12, 1\n    wait seq, f4, 1\n    wait seq, f5, "
          "1\n";
    if (r_.writes_state) s_ << "    wait seq, f9, " << (r_.state_64 ? 2 : 1) << "\n";
    return head_.str() + s_.str();
  }

 private:
  // v30 = each slot's element counter within a vreg (0..1023 as s32 bits): vregs of k, then
  // DMA gathers element 0 of vreg l into lane l, and sublane s's base 128 s.
  void SlotCounters() {
    s_ << "    vmovi v0, " << Bits(0u) << "\n    vmovi v1, " << Bits(1u) << "\n    li r1, "
       << kCounters << "\n    li r3, 128\n    vloop r3, 2\n    vsts v0, r1, 4096\n"
       << "    vadd.s32 v0, v0, v1\n    vmovi v0, " << Bits(0u) << "\n    vmovi v1, " << Bits(128u)
       << "\n    li r1, " << kCounters + 128 * kVregBytes
       << "\n    li r3, 8\n    vloop r3, 2\n    vsts v0, r1, 4096\n    vadd.s32 v0, v0, v1\n"
       << "    signal vpu, f6, 1\n    wait dma, f6, 1\n"
       << ".desc lanes rows=128 row_bytes=4 src_stride=4096 dst_stride=4 planes=8 "
          "src_plane_stride=0 dst_plane_stride=512\n"
       << ".desc sublanes rows=8 row_bytes=512 src_stride=4096 dst_stride=512\n"
       << "    li r1, " << kCounters << "\n    li r2, " << kLaneIota
       << "\n    dma.vv r2, r1, lanes, f7\n    li r1, " << kCounters + 128 * kVregBytes
       << "\n    li r2, " << kSublaneBase << "\n    dma.vv r2, r1, sublanes, f7\n"
       << "    wait vpu, f7, 2\n    li r1, " << kLaneIota << "\n    vld v0, r1\n    li r1, "
       << kSublaneBase << "\n    vld v1, r1\n    vadd.s32 v30, v0, v1\n";
  }

  // v28, v29 = the key's low and high words: immediates, or folded from the state on the
  // sequencer (64-bit xor and multiply), which also writes the advanced state.
  void Key() {
    if (r_.key) {
      s_ << "    vmovi v28, " << Bits(static_cast<uint32_t>(*r_.key)) << "\n    vmovi v29, "
         << Bits(static_cast<uint32_t>(*r_.key >> 32)) << "\n";
      return;
    }
    const int64_t words = r_.state_elements * (r_.state_64 ? 2 : 1);
    head_ << ".desc state rows=1 row_bytes=" << words * 4 << "\n";
    s_ << assembly::LoadAddress(1, r_.state, 2) << "    li r2, 0\n    dma.hs r2, r1, state, f8\n"
       << "    wait seq, f8, 1\n"
       << assembly::LoadAddress(10, eval::RngStateKeyStart(r_.seed), 2)
       << assembly::LoadAddress(11, 0x100000001b3ull, 2) << "    li r12, 32\n";
    for (int64_t e = 0; e < r_.state_elements; ++e) {
      Element(13, e);
      s_ << "    xor r10, r10, r13\n    mul r10, r10, r11\n";
    }
    s_ << "    vbcast v28, r10\n    shri r10, r10, 32\n    vbcast v29, r10\n";
    if (!r_.writes_state) return;
    // The new state: a copy of the old, then element 0 + the number of outputs.
    head_ << ".desc state_copy rows=1 row_bytes=" << words * 4
          << "\n.desc word rows=1 row_bytes=4\n";
    Element(13, 0);
    s_ << "    addi r13, r13, " << r_.elements << "\n    vbcast v2, r13\n    shri r13, r13, 32\n"
       << "    vbcast v3, r13\n    li r1, " << kStateWord << "\n    vst v2, r1\n    li r1, "
       << kStateWord + kVregBytes << "\n    vst v3, r1\n    signal vpu, f10, 1\n"
       << assembly::LoadAddress(1, r_.state, 2) << assembly::LoadAddress(2, r_.new_state, 3)
       << "    dma.hh r2, r1, state_copy, f11\n    wait dma, f11, 1\n    wait dma, f10, 1\n"
       << "    li r1, " << kStateWord << "\n    dma.vh r2, r1, word, f9\n";
    if (r_.state_64)
      s_ << "    addi r2, r2, 4\n    li r1, " << kStateWord + kVregBytes
         << "\n    dma.vh r2, r1, word, f9\n";
  }

  // Scalar register `rd` = state element `e` as an unsigned 64-bit value (sld sign-extends).
  void Element(int rd, int64_t e) {
    const int64_t at = e * (r_.state_64 ? 8 : 4);
    s_ << "    li r1, 0\n    sld r" << rd << ", r1, " << at << "\n    shl r" << rd << ", r" << rd
       << ", r12\n    shr r" << rd << ", r" << rd << ", r12\n";
    if (r_.state_64)
      s_ << "    sld r14, r1, " << at + 4 << "\n    shl r14, r14, r12\n    or r" << rd << ", r"
         << rd << ", r14\n";
  }

  // v24, v25: the hash's multipliers; v26: 1024 (the next vreg's counters); v27: counters.
  void Constants() {
    s_ << "    vmovi v24, " << Bits(eval::kRngMul1) << "\n    vmovi v25, " << Bits(eval::kRngMul2)
       << "\n    vmovi v26, " << Bits(static_cast<uint32_t>(kVregElems)) << "\n    vmovi v27, "
       << Bits(0u) << "\n    vadd.s32 v27, v27, v30\n";
    for (const std::string& line : normal_.prologue) s_ << "    " << line << "\n";
    if (!r_.low) return;
    s_ << "    vmovi v20, " << Bits(*r_.high) << "\n    vmovi v21, " << Bits(*r_.low)
       << "\n    vmovi v22, " << Bits(*r_.high - *r_.low) << "\n    vmovi v23, " << Bits(0x1p-24f)
       << "\n";
  }

  // v0 = the bits of counter `counter` (a register): two rounds of the hash keyed by v28 and
  // v29 (v1 scratch).
  template <typename Line>
  static void Hash(Line line, const std::string& counter) {
    auto mix = [&] {
      for (auto [shift, mul] : {std::pair{eval::kRngShift1, 24}, {eval::kRngShift2, 25}}) {
        line("vshr.u32 v1, v0, " + std::to_string(shift));
        line("vxor.u32 v0, v0, v1");
        line("vmul.u32 v0, v0, v" + std::to_string(mul));
      }
      line("vshr.u32 v1, v0, " + std::to_string(eval::kRngShift3));
      line("vxor.u32 v0, v0, v1");
    };
    line("vadd.s32 v0, " + counter + ", v28");
    mix();
    line("vxor.u32 v0, v0, v29");
    mix();
  }

  // RNG_NORMAL's body (eval::RngNormalF32): element i from counters 2i and 2i + 1, Box-Muller
  // in f32 with the composed cosine; temps v2..v10 and v20..v23, constants v11..v19 and v31.
  void NormalBody() {
    RegisterPoolEmitter& e = normal_;
    auto raw = [&](const std::string& t) { e.Raw(t); };
    auto with_constant = [&](int dst, const char* mnemonic, int src, double c, bool s32 = false) {
      const int k = s32 ? e.S32(static_cast<int64_t>(c)) : e.F32(c);
      e.EmitTo(dst, mnemonic, {src, k});
      e.Release(k);
    };
    auto uniform = [&](int second) {  // v0 = u in [0, 1) from counter 2i + second
      raw("vadd.s32 v0, v27, v27");
      if (second) with_constant(0, "vadd.s32", 0, 1, /*s32=*/true);
      Hash(raw, "v0");
      raw("vshr.u32 v0, v0, 8");
      raw("vcvt.f32.s32 v0, v0");
      with_constant(0, "vmul", 0, 0x1p-24);
    };
    uniform(0);
    const int one = e.F32(1.0);
    const int radius = e.Emit("vsub", {one, 0});  // sqrt(-2 log(1 - u))
    e.Release(one);
    e.EmitTo(radius, "vlog", {radius});
    with_constant(radius, "vmul", radius, -2.0);
    e.EmitTo(radius, "vsqrt", {radius});
    uniform(1);
    with_constant(0, "vmul", 0, eval::kRngTwoPiF32);
    const int x = SineOrCosine(e, 0, /*cosine=*/true);
    e.EmitTo(x, "vmul", {radius, x});
    with_constant(x, "vmul", x, *r_.stddev);
    with_constant(x, "vadd", x, *r_.mean);
    raw("vsts v" + std::to_string(x) + ", r1, 4096");
    raw("vadd.s32 v27, v27, v26");
  }

  // The per-vreg body: counters -> bits (-> uniform or normal f32) -> stored; returns its
  // length.
  std::string Body(int& lines) const {
    std::ostringstream b;
    auto line = [&](const std::string& t) { b << "    " << t << "\n", ++lines; };
    if (r_.mean) {
      for (const std::string& t : normal_.body) line(t);
      return b.str();
    }
    Hash(line, "v27");
    if (r_.low) {
      line("vshr.u32 v0, v0, 8");
      line("vcvt.f32.s32 v0, v0");
      line("vmul v0, v0, v23");
      line("vmul v0, v0, v22");
      line("vadd v0, v21, v0");
      line("vcmp.lt v1, v0, v20");
      line("vsel v0, v1, v0, v21");
    }
    line("vsts v0, r1, 4096");
    line("vadd.s32 v27, v27, v26");
    return b.str();
  }

  // One chunk of `vregs` vregs into buffer `slot`, then `bytes` of it to HBM at r20.
  void Chunk(int slot, int64_t vregs, int64_t bytes) {
    int lines = 0;
    const std::string body = Body(lines);
    const std::string desc = "out" + std::to_string(bytes);
    if (descs_.insert(bytes).second)
      head_ << ".desc " << desc << " rows=1 row_bytes=" << bytes << "\n";
    s_ << "    wait vpu, f" << 4 + slot << ", 1\n    li r1, "
       << kBuffers + slot * kChunkVregs * kVregBytes << "\n    li r3, " << vregs
       << "\n    vloop r3, " << lines << "\n"
       << body << "    signal vpu, f" << slot << ", 1\n    wait dma, f" << slot
       << ", 1\n    li r1, " << kBuffers + slot * kChunkVregs * kVregBytes << "\n    dma.vh r"
       << kOut << ", r1, " << desc << ", f" << 4 + slot << "\n    addi r" << kOut << ", r" << kOut
       << ", " << bytes << "\n";
  }

  // Pairs of full chunks in a scalar loop, then what is left.
  void Chunks() {
    const int64_t vregs = (r_.elements + kVregElems - 1) / kVregElems;
    const int64_t full = vregs / kChunkVregs, pairs = full / 2;
    const int64_t chunk_bytes = kChunkVregs * kVregBytes;
    s_ << assembly::LoadAddress(kOut, r_.output, 2);
    if (pairs > 0) {
      s_ << "    li r" << kPair << ", 0\n    li r" << kPairs << ", " << pairs << "\npairs:\n";
      Chunk(0, kChunkVregs, chunk_bytes);
      Chunk(1, kChunkVregs, chunk_bytes);
      s_ << "    addi r" << kPair << ", r" << kPair << ", 1\n    blt r" << kPair << ", r" << kPairs
         << ", pairs\n";
    }
    int slot = 0;
    int64_t done = pairs * 2 * kChunkVregs * kVregElems;
    if (full % 2) Chunk(slot++, kChunkVregs, chunk_bytes), done += kChunkVregs * kVregElems;
    if (done < r_.elements)
      Chunk(slot, (r_.elements - done + kVregElems - 1) / kVregElems, (r_.elements - done) * 4);
  }

  const Rng& r_;
  RegisterPoolEmitter normal_{{2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 21, 22, 23},
                              {11, 12, 13, 14, 15, 16, 17, 18, 19, 31}};
  std::ostringstream s_, head_;
  std::set<int64_t> descs_;
};

bool Is32Bit(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kS32 || t == PrimitiveType::kU32;
}

std::optional<float> F32Constant(const HloInstruction* v) {
  if (v->opcode() != Opcode::kConstant || v->shape().type != PrimitiveType::kF32 ||
      v->literal().floats.size() != 1)
    return std::nullopt;
  return static_cast<float>(v->literal().floats[0]);
}

}  // namespace

std::string RngKernel(const HloInstruction& instr, const OpContext& c, uint64_t seed,
                      LoweredOp& op) {
  const Opcode code = instr.opcode();
  if (code != Opcode::kRng && code != Opcode::kRngBitGenerator) return "";
  if (!instr.parent()->is_entry()) return "";  // one draw per step
  Rng r;
  r.seed = seed;
  if (code == Opcode::kRng) {
    const hlo::Shape& y = instr.shape();
    const std::string dist = instr.GetWord("distribution").value_or("RNG_UNIFORM");
    if (!y.IsArray() || y.type != PrimitiveType::kF32 ||
        (dist != "RNG_UNIFORM" && dist != "RNG_NORMAL") || instr.operand_count() != 2)
      return "";
    const std::optional<float> a = F32Constant(instr.operand(0)), b = F32Constant(instr.operand(1));
    if (!a || !b) return "";
    if (dist == "RNG_NORMAL") {
      r.mean = a, r.stddev = b;
    } else {
      r.low = a, r.high = b;
      if (!(*a < *b)) return "";
    }
    r.elements = y.ElementCount(), r.output = c.address(&instr);
    r.key = eval::RngOpKey(seed, instr.name(), 0);
  } else {
    const hlo::Shape& y = instr.shape();
    if (!y.IsTuple() || y.tuple_shapes.size() != 2 || instr.operand_count() != 1) return "";
    const hlo::Shape &state = y.tuple_shapes[0], &bits = y.tuple_shapes[1];
    if (!bits.IsArray() || !Is32Bit(bits.type) || !state.IsArray() ||
        (state.type != PrimitiveType::kU64 && state.type != PrimitiveType::kU32) ||
        state.ElementCount() > kMaxStateElements || state.ElementCount() == 0 ||
        instr.operand(0)->opcode() == Opcode::kConstant)
      return "";
    std::vector<std::optional<uint64_t>> out;
    if (!TupleResultAddresses(instr, c, out) || !out[1]) return "";
    r.elements = bits.ElementCount(), r.output = *out[1];
    r.state = c.address(instr.operand(0)), r.state_elements = state.ElementCount();
    r.state_64 = state.type == PrimitiveType::kU64;
    r.writes_state = out[0].has_value(), r.new_state = out[0].value_or(0);
  }
  if (r.elements <= 0 || r.elements * 4 > (int64_t{1} << 31)) return "";
  std::string kernel;
  try {
    kernel = Emitter(r).Run();
  } catch (const std::length_error&) {  // a body needing more VPU registers than it has
    return "";
  }
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = static_cast<uint64_t>(r.elements * 4);
  op.exact = true;
  return ".tag \"" + instr.name() + "\"\n" + kernel;
}

}  // namespace tpusim::lowering
