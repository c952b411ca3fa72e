#include "isa/isa_doc.h"

#include <functional>
#include <string_view>
#include <vector>

#include "isa/isa.h"

namespace tpusim::isa {
namespace {

std::string_view KindName(OperandKind k) {
  static constexpr std::string_view kNames[] = {"sreg", "vreg",  "flag", "unit", "mxu",
                                                "imm",  "label", "desc", "fimm"};
  return kNames[static_cast<int>(k)];
}

// Markdown table cells must not contain a bare '|'.
std::string Cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// Appends each piece (avoids GCC 12's false -Wrestrict on "literal" + std::string).
template <class... P>
void Append(std::string& out, const P&... pieces) {
  (out.append(pieces), ...);
}

std::string Row(const OpInfo& op) {
  std::string operands, layout = "op[0,8)";
  int pos = 8;
  for (int i = 0; i < op.num_operands(); ++i) {
    OperandKind k = op.operand(i);
    Append(operands, i ? ", " : "", KindName(k));
    int bits = OperandBits(k);
    Append(layout, " ", op.operand_letters.substr(i, 1), "[", std::to_string(pos), ",",
           std::to_string(pos + bits), ")");
    pos += bits;
  }
  std::string row;
  Append(row, "| `", op.mnemonic, "` | ", operands.empty() ? "-" : operands, " | ",
         Cell(op.semantics), " | ", TimingClassName(op.timing), " | `", layout, "` |\n");
  return row;
}

constexpr std::string_view kHeader = R"(# tpusim instruction set

Generated from `isa/opcodes.def` by `IsaMarkdown()` (isa/isa_doc.cc); do not edit by
hand. Regenerate with `scripts/gen-isa-doc.sh`.

One TensorCore has a scalar sequencer (`seq`) that fetches every instruction in order
and hands it to the in-order queue of its unit: `dma`, `mxu0`..`mxu3` (a v3 core has
two MXUs) or `vpu`. Units run concurrently and synchronise through 32 counting flags.

### Two instruction streams

A program may hold a second stream, the collective stream, from the instruction after
`.collective` to its own `halt`. A second sequencer runs it beside the main one (from
instruction 0), with a DMA queue and a VPU queue of its own and a bank of 32 flags of its
own; its copies take the core's DMA engines in turn with the main stream's (there is one
set of engines), and it has no MXU. A `wait` or `signal` waits on, and a copy's
completion adds to, the flags of the stream that issued it (a `dma.g` adds to that
stream's flag on the destination core); `xsignal` adds to a flag of the other stream,
which is how the main stream hands the collective stream its work and learns it is done.
A collective all-reduce thus runs while the main stream computes, as XLA's asynchronous
collectives (`all-reduce-start` / `all-reduce-done`) do on a TPU. The collective stream's
VPU queue is an approximation: a TensorCore has one vector unit, which the real program
shares between the two (its work there is a collective's folds, one vector add per 4 KiB).

### Kernel windows

`window bank, base` tags every instruction its sequencer issues after it, until the next
`window` or the step's end: flags f0..f15 and f30 then name bank `bank` (each exists twice;
f16..f29 and f31 are one per stream in both banks), and each VMEM address of the core the
instruction names (a VPU load or store, an MXU read or pop, the local end of a copy; not a
`dma.g` global address) moves up by `base` bytes. Two kernels are thus in flight at once,
each with its own flags and VMEM range, with unchanged code: the next one issues while the
last one drains (docs/lowering.md, "Kernel windows").

## Operands

| letter | kind | assembly | bits |
|---|---|---|---|
| r | sreg | scalar register `r0`..`r31` (64-bit; immediates are 32-bit, wider values are built with shifts) | 5 |
| v | vreg | vector register `v0`..`v31` (f32[8,128]) | 5 |
| f | flag | sync flag `f0`..`f31` | 5 |
| u | unit | `seq`, `dma`, `mxu0`..`mxu3`, `vpu` (encoded 0..6) | 3 |
| m | mxu | `m0`..`m3` | 2 |
| i | imm | signed 32-bit integer: decimal, `0x` hex (up to `0xffffffff` as bits), or an `.equ` name | 32 |
| l | label | a label name; encoded as the target instruction index | 32 |
| d | desc | a `.desc` name; encoded as the descriptor index | 16 |
| x | fimm | f32: decimal/scientific, `inf`, `-inf`, `nan`, or `f32:0xXXXXXXXX` exact bits | 32 |

## Instructions

The last column is the bit layout of the 128-bit encoding; all other bits are zero.
)";

constexpr std::string_view kEncoding = R"(
## Encoding

An instruction is 16 bytes: two little-endian uint64, low word first, forming one
128-bit value. Bits 0..7 hold the opcode (the row order of `isa/opcodes.def`, starting
at 0). Operands follow LSB-first from bit 8 in operand order, each as wide as its kind
(table Operands); 32-bit fields hold the int32 bit pattern. Every remaining bit is zero.

A program file (all integers little-endian):

| field | contents |
|---|---|
| magic | the 8 bytes `TPUSIM01`, or `TPUSIM02` for a program with a collective stream |
| counts | u32 num_tags (1..65536), u32 num_descs (0..65536), u32 num_instrs |
| collective entry | `TPUSIM02` only: u32, the index of the collective stream's first instruction (below num_instrs) |
| tags | num_tags x { u32 length, bytes }; tags[0] is "" and tags are distinct |
| descriptors | num_descs x { u32 name length, name, u32 rows, u32 row_bytes, i64 src_stride, i64 dst_stride, u32 planes, i64 src_plane_stride, i64 dst_plane_stride } |
| code | num_instrs x 16-byte instruction |
| instruction tags | num_instrs x u16 index into tags |

The decoder rejects, with the byte offset: a bad magic, truncation, trailing bytes,
absurd counts, unknown opcodes, nonzero reserved bits, out-of-range unit, descriptor and
tag indices, labels outside [0, num_instrs], duplicate tags or descriptor names,
descriptor names that are not identifiers, and rows, row_bytes or planes of 0.

## Assembly syntax

One statement per line; `#` and `;` start a comment (outside strings).

```
.desc NAME rows=R row_bytes=B src_stride=S dst_stride=D [planes=P src_plane_stride=S2 dst_plane_stride=D2]
.equ NAME value        # integer constant, usable wherever an immediate is
.tag "text"            # provenance tag (HLO op name) of the following instructions; "" = none
.tags "a", "b"         # intern tags in this order (the disassembler emits it when needed)
.collective            # the collective stream starts at the next instruction (one per program)
label:                 # alone or before a statement; forward and backward references
mnemonic op, op, ...   # e.g. add r1, r2, r3 / li r4, -16 / beq r1, r2, loop
```

`.desc` defaults: rows=1, planes=1, strides 0; row_bytes is required; rows, row_bytes
and planes are at least 1. Names (labels, descriptors, constants) match
`[A-Za-z_][A-Za-z0-9_.]*`; descriptors and constants are defined before use. Strings
take the escapes `\\`, `\"`, `\n`, `\t` and `\xHH`. Errors read `file:line:column: message`.

The disassembler prints `.desc` lines, then the code with `.tag` lines where the tag
changes and `L<index>:` labels at branch targets; assembling its output gives the same
program, bit for bit.
)";

}  // namespace

std::string IsaMarkdown() {
  std::string out(kHeader);
  struct Group {
    std::string_view title;
    std::function<bool(const OpInfo&)> match;
  };
  const std::vector<Group> groups = {
      {"Scalar unit (`seq`)", [](const OpInfo& o) { return o.unit == Unit::kScalar; }},
      {"Sync (executed by the unit named by the `u` operand)",
       [](const OpInfo& o) { return o.unit == Unit::kByOperand && o.operand_letters[0] == 'u'; }},
      {"DMA (`dma`)", [](const OpInfo& o) { return o.unit == Unit::kDma; }},
      {"MXU (`mxu0`..`mxu3`, named by the `m` operand)",
       [](const OpInfo& o) { return o.unit == Unit::kByOperand && o.operand_letters[0] == 'm'; }},
      {"Vector unit (`vpu`)", [](const OpInfo& o) { return o.unit == Unit::kVpu; }},
  };
  std::vector<bool> done(kNumOpcodes, false);
  auto table = [&](std::string_view title, const std::function<bool(const OpInfo&)>& match) {
    std::string rows;
    for (const OpInfo& op : AllOps())
      if (!done[static_cast<int>(op.opcode)] && match(op)) {
        rows += Row(op);
        done[static_cast<int>(op.opcode)] = true;
      }
    if (rows.empty()) return;
    Append(out, "\n### ", title, "\n\n");
    out += "| mnemonic | operands | semantics | timing | encoding |\n|---|---|---|---|---|\n";
    out += rows;
  };
  for (const Group& g : groups) table(g.title, g.match);
  table("Other", [](const OpInfo&) { return true; });  // nothing may go undocumented

  out +=
      "\n## Timing\n\nEach instruction costs the formula of its timing class; names in "
      "backquotes are keys of the hardware configuration.\n\n| class | cost |\n|---|---|\n";
  for (int t = 0; t <= static_cast<int>(TimingClass::kVpuLoop); ++t) {
    auto tc = static_cast<TimingClass>(t);
    Append(out, "| ", TimingClassName(tc), " | ", Cell(TimingFormula(tc)), " |\n");
  }
  out += kEncoding;
  return out;
}

}  // namespace tpusim::isa
