#include "compiler/lowering/vpu/tile_ops.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "compiler/assembly/asm_util.h"
#include "compiler/hlo/opcode.h"
#include "compiler/lowering/vpu/tile_kernel.h"
#include "compiler/lowering/vpu/vpu_body.h"
#include "compiler/lowering/vpu/vpu_math.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using DimMap = std::vector<int64_t>;  // value dimension k sits at result dimension map[k]

bool F32(const hlo::Shape& s) { return s.IsArray() && s.type == hlo::PrimitiveType::kF32; }

// The [rows, cols] view of a row-major shape: the last dimension is the columns.
std::pair<int64_t, int64_t> View(const hlo::Shape& s) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < s.dims.size(); ++i) rows *= s.dims[i];
  return {rows, s.dims.empty() ? 1 : s.dims.back()};
}

DimMap Identity(size_t rank) {
  DimMap m(rank);
  std::iota(m.begin(), m.end(), 0);
  return m;
}

// How a value laid out by `map` is read at each result position, if the kernel can.
std::optional<TileOperand> Layout(const DimMap& map, const hlo::Shape& out, uint64_t address) {
  const size_t rank = out.dims.size();
  if (map.empty()) return TileOperand{address, 0, 0};  // a scalar
  if (map == Identity(rank)) return TileOperand{address, View(out).second, 1};
  if (map.size() == 1 && rank >= 2 && map[0] == static_cast<int64_t>(rank) - 1)
    return TileOperand{address, 0, 1};         // a row vector, repeated on every row
  if (rank >= 2 && map == Identity(rank - 1))  // one value per row, repeated along it
    return TileOperand{address, 1, 0};
  const size_t k = map.size();  // the trailing dimensions: a matrix repeated along the others
  bool trailing = k >= 2 && k < rank;
  for (size_t i = 0; trailing && i < k; ++i)
    trailing = map[i] == static_cast<int64_t>(rank - k + i);
  if (!trailing) return std::nullopt;
  int64_t period = 1;
  for (size_t d = rank - k; d + 1 < rank; ++d) period *= out.dims[d];
  return TileOperand{address, View(out).second, 1, false, 0, period};
}

// A value laid out as [0, split) + {rank - 1} of the result: one row per index of the
// leading dimensions, repeated over the middle ones (the gradient of global average pooling).
// Returns `split`, or 0 when `map` is not of that form.
int64_t GapSplit(const DimMap& map, size_t rank) {
  if (rank < 3 || map.size() < 2 || map.back() != static_cast<int64_t>(rank) - 1) return 0;
  const int64_t split = static_cast<int64_t>(map.size()) - 1;
  for (int64_t k = 0; k < split; ++k)
    if (map[static_cast<size_t>(k)] != k) return 0;
  return split + 1 < static_cast<int64_t>(rank) ? split : 0;
}

// How a value laid out by `map` is read in the grouped view [groups, rows, cols] of `out`
// (groups = the dimensions before `split`, cols = the last, rows = those between).
std::optional<TileOperand> GroupedLayout(const DimMap& map, const hlo::Shape& out, int64_t split,
                                         uint64_t address) {
  const size_t rank = out.dims.size();
  int64_t rows = 1;
  for (size_t k = static_cast<size_t>(split); k + 1 < rank; ++k) rows *= out.dims[k];
  const int64_t cols = out.dims.back();
  DimMap leading_and_last = Identity(static_cast<size_t>(split));
  leading_and_last.push_back(static_cast<int64_t>(rank) - 1);
  if (map.empty()) return TileOperand{address, 0, 0};
  if (map == Identity(rank)) return TileOperand{address, cols, 1, false, rows * cols};
  if (map == leading_and_last) return TileOperand{address, 0, 1, false, cols};
  if (map == DimMap{static_cast<int64_t>(rank) - 1}) return TileOperand{address, 0, 1};
  if (map == Identity(static_cast<size_t>(split))) return TileOperand{address, 0, 0, false, 1};
  if (map == Identity(rank - 1)) return TileOperand{address, 1, 0, false, rows};
  return std::nullopt;
}

bool Elementwise(const HloInstruction& i) {
  const hlo::OpCategory c = hlo::GetOpcodeInfo(i.opcode()).category;
  return c == hlo::OpCategory::kElementwiseUnary || c == hlo::OpCategory::kElementwiseBinary ||
         c == hlo::OpCategory::kElementwiseTernary || i.opcode() == Opcode::kCopy ||
         i.opcode() == Opcode::kConvert;
}

// Records the layout of every value of a fused expression; false when one has two layouts
// or goes through an op that moves elements (reshape, transpose, slice, ...). A work list,
// not recursion: a chain of ops as long as the module's does not nest a frame per op.
bool Propagate(const HloInstruction* root, const DimMap& root_map,
               std::map<const HloInstruction*, DimMap>& maps) {
  std::vector<std::pair<const HloInstruction*, DimMap>> work = {{root, root_map}};
  while (!work.empty()) {
    auto [i, map] = std::move(work.back());
    work.pop_back();
    auto [it, added] = maps.emplace(i, map);
    if (!added) {
      if (it->second != map) return false;
      continue;
    }
    if (i->opcode() == Opcode::kParameter || i->opcode() == Opcode::kConstant) continue;
    if (i->opcode() == Opcode::kBroadcast) {
      const hlo::IntList* d = i->dimensions();
      DimMap m;
      for (int64_t k : d ? *d : hlo::IntList{}) m.push_back(map[static_cast<size_t>(k)]);
      work.push_back({i->operand(0), std::move(m)});
      continue;
    }
    if (!Elementwise(*i)) return false;
    for (auto o = i->operands().rbegin(); o != i->operands().rend(); ++o)
      work.push_back({*o, (*o)->shape().dims.empty() ? DimMap{} : map});
  }
  return true;
}

std::optional<double> ScalarConstant(const HloInstruction* i) {
  if (i->opcode() != Opcode::kConstant || !i->shape().IsScalar()) return std::nullopt;
  const hlo::Literal& l = i->literal();
  if (!l.floats.empty()) return l.floats[0];
  return std::nullopt;
}

// Reduce over the last dimension, all but the last, or everything, with add or max.
bool PlanReduce(const HloInstruction& r, const hlo::Shape& in, TileProgram& p) {
  const hlo::HloComputation* f = r.to_apply();
  const std::optional<double> init = ScalarConstant(r.operand(1));
  if (r.operand_count() != 2 || !F32(r.operand(0)->shape()) || !f || !init) return false;
  const Opcode combiner = f->root()->opcode();
  if ((combiner != Opcode::kAdd && combiner != Opcode::kMaximum) ||
      f->root()->operand(0)->opcode() != Opcode::kParameter ||
      f->root()->operand(1)->opcode() != Opcode::kParameter)
    return false;
  const size_t rank = in.dims.size();
  DimMap d(r.dimensions()->begin(), r.dimensions()->end());
  std::sort(d.begin(), d.end());
  if (rank == 0 || d.empty()) return false;
  auto consecutive_from = [&d](int64_t first) {
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] != first + static_cast<int64_t>(i)) return false;
    return true;
  };
  const bool suffix = consecutive_from(static_cast<int64_t>(rank - d.size()));
  DimMap leading = Identity(rank - 1);
  std::tie(p.rows, p.cols) = View(in);
  if (d == Identity(rank)) {
    p.reduce = TileReduce::kAll;
  } else if (d == DimMap{static_cast<int64_t>(rank) - 1}) {
    p.reduce = TileReduce::kRows;
  } else if (d == leading) {
    p.reduce = TileReduce::kCols;
  } else if (d.back() < static_cast<int64_t>(rank) - 1 &&
             d.back() - d.front() + 1 == static_cast<int64_t>(d.size())) {
    // Over middle dimensions [a, b] (global average pooling over H and W of NHWC): one
    // column reduction per index of the dimensions before them, the columns being the
    // dimensions after them.
    p.reduce = TileReduce::kCols;
    p.groups = 1, p.rows = 1, p.cols = 1;
    for (int64_t k = 0; k < static_cast<int64_t>(rank); ++k)
      (k < d.front()   ? p.groups
       : k <= d.back() ? p.rows
                       : p.cols) *= in.dims[static_cast<size_t>(k)];
    p.output_group_stride = p.cols;
  } else if (suffix) {  // over trailing dimensions: [rows, cols] with cols = their product
    p.reduce = TileReduce::kRows;
    p.rows = 1, p.cols = 1;
    for (size_t k = 0; k < rank; ++k)
      (static_cast<int64_t>(k) < d.front() ? p.rows : p.cols) *= in.dims[k];
  } else {
    return false;
  }
  p.max = combiner == Opcode::kMaximum;
  p.init = *init;
  p.result = 0;
  return true;
}

bool IsInt32(const hlo::Shape& s) {
  return s.IsArray() && (s.type == hlo::PrimitiveType::kS32 || s.type == hlo::PrimitiveType::kU32);
}

// A pred result a non-elementwise user reads (a conditional's predicate): stored as the
// VPU computes it, one f32 word of 0 or 1 per element, so at most 128 elements fit the
// buffer memory planning gives it (1 byte per element, placed 512-byte aligned).
bool StoredPred(const hlo::Shape& s) {
  return s.IsArray() && s.type == hlo::PrimitiveType::kPred && s.ElementCount() <= 128;
}

bool SetLayout(std::map<const HloInstruction*, DimMap>& maps, const HloInstruction* v,
               const DimMap& map) {
  auto [it, added] = maps.emplace(v, map);
  return added || it->second == map;
}

// The layout of every value an elementwise op or loop fusion reads: its leaves and those of
// the pred producers inlined into it (vpu_body.h). False when one has no single layout.
bool LeafLayouts(const HloInstruction& instr, std::map<const HloInstruction*, DimMap>& maps,
                 std::vector<const HloInstruction*>& computed) {
  const DimMap full = Identity(instr.shape().dims.size());
  std::vector<std::pair<const HloInstruction*, const HloInstruction*>> leaves;  // local, outside
  auto add_computed = [&](const HloInstruction& op) {
    if (op.opcode() != Opcode::kFusion) return computed.push_back(&op);
    for (const auto& i : op.fused_computation()->instructions()) computed.push_back(i.get());
  };
  add_computed(instr);
  if (instr.opcode() == Opcode::kFusion) {
    if (!Propagate(instr.fused_computation()->root(), full, maps)) return false;
    for (const HloInstruction* q : instr.fused_computation()->parameters())
      leaves.emplace_back(q, instr.operand(static_cast<size_t>(q->parameter_number())));
  } else {
    for (const HloInstruction* o : instr.operands()) {
      if (!SetLayout(maps, o, o->shape().dims.empty() ? DimMap{} : full)) return false;
      leaves.emplace_back(o, o);
    }
  }
  for (const auto& [local, outside] : leaves) {
    if (!InlinedIntoUsers(*outside) || !maps.count(local)) continue;
    const DimMap m = maps[local];
    add_computed(*outside);
    if (outside->opcode() == Opcode::kFusion) {
      if (!Propagate(outside->fused_computation()->root(), m, maps)) return false;
      continue;
    }
    for (const HloInstruction* x : outside->operands())
      if (!SetLayout(maps, x, x->shape().dims.empty() ? DimMap{} : m)) return false;
  }
  return true;
}

// The VPU holds s32 and u32 values as bit patterns: they may be moved (broadcast, select),
// converted, compared, and combined by the ops with integer forms (vpu_math.h: arithmetic,
// logic, order, divide, remainder, power).
bool IntsSupported(const std::vector<const HloInstruction*>& computed) {
  for (const HloInstruction* u : computed)
    for (size_t k = 0; k < u->operand_count(); ++k) {
      const hlo::Shape& s = u->operand(k)->shape();
      if (!IsInt32(s)) continue;
      const Opcode op = u->opcode();
      const bool ok = op == Opcode::kBroadcast || op == Opcode::kCopy || op == Opcode::kBitcast ||
                      op == Opcode::kBitcastConvert || op == Opcode::kAdd ||
                      op == Opcode::kSubtract || op == Opcode::kConvert ||
                      (op == Opcode::kSelect && k > 0) ||
                      op == Opcode::kCompare ||  // s32 and u32 (CompareU32) in any direction
                      HasIntegerForm(op, u->shape().type);
      if (!ok) return false;
    }
  return true;
}

// An elementwise op, loop fusion or broadcast: the body and the layout of each input.
bool PlanElementwise(const HloInstruction& instr, TileProgram& p,
                     std::vector<const HloInstruction*>& loaded, std::vector<DimMap>& layouts) {
  if (instr.opcode() == Opcode::kBroadcast) {
    const hlo::IntList* d = instr.dimensions();
    loaded = {instr.operand(0)};
    layouts = {d ? DimMap(d->begin(), d->end()) : DimMap{}};
    return true;
  }
  if (instr.opcode() == Opcode::kFusion ? !instr.fused_computation() : !Elementwise(instr))
    return false;
  std::map<const HloInstruction*, DimMap> maps;
  std::vector<const HloInstruction*> computed;
  if (!LeafLayouts(instr, maps, computed) || !IntsSupported(computed)) return false;
  VpuBody body = BuildVpuBody(instr, /*mapped_broadcasts=*/true, kTileMaxInputs);
  if (!body.exact || !BodyFitsTileRegisters(body.body)) return false;
  p.prologue = body.prologue, p.body = body.body, p.result = body.result;
  loaded = body.inputs;
  for (const HloInstruction* local : body.input_locals) {
    if (!maps.count(local)) return false;
    layouts.push_back(maps[local]);
  }
  return true;
}

// An iota read by the kernel is regenerated from its index table (no HBM read, and its
// buffer may already be reused) plus the tile's first column or row; one table per kernel.
std::optional<TileOperand> IotaOperand(const HloInstruction& iota, int64_t at,
                                       const hlo::Shape& space, TileProgram& p) {
  const int64_t rank = static_cast<int64_t>(space.dims.size());
  if (p.index_table > 0) return std::nullopt;
  p.index_bits = IsInt32(iota.shape());
  const std::pair<int64_t, int64_t> view = View(space);
  if (at == rank - 1) {  // the column index: lanes 0..127, repeated on every row
    p.index_table = std::min(kTileEdge, view.second);
    return TileOperand{kTileIndexTable, 0, 1, /*vmem=*/true, 0, 0, TileIndex::kColumn};
  }
  if (rank == 2 && at == 0) {  // the row index: one entry per row of a tile
    p.index_table = std::min(kTileMaxIndex, view.first);
    return TileOperand{kTileIndexTable, 1, 0, /*vmem=*/true, 0, 0, TileIndex::kRow};
  }
  return std::nullopt;
}

std::optional<TileOperand> IotaLayout(const HloInstruction& iota, const DimMap& map,
                                      const hlo::Shape& space, TileProgram& p) {
  const int64_t dim = iota.GetInt("iota_dimension").value_or(-1);
  if (dim < 0 || static_cast<size_t>(dim) >= map.size()) return std::nullopt;
  return IotaOperand(iota, map[static_cast<size_t>(dim)], space, p);
}

// An iota over `space`.
bool PlanIota(const HloInstruction& instr, const hlo::Shape& space, TileProgram& p,
              std::vector<DimMap>& layouts) {
  const size_t rank = space.dims.size();
  const int64_t dim = instr.GetInt("iota_dimension").value_or(-1);
  if (rank == 0 || dim < 0) return false;
  std::optional<TileOperand> o = IotaOperand(instr, dim, space, p);
  if (!o) return false;
  p.inputs = {*o};
  layouts.clear();
  return true;
}

// A thin elementwise result whose operands are all full-size or scalars is one flat
// sequence of elements: viewed as [n / 128, 128] and a tail row of n % 128, two programs
// with a drain between them. Empty for other thin results (they keep the stream's timing).
std::string FlatKernel(const TileProgram& p, int mxus) {
  const int64_t n = p.rows * p.cols;
  if (p.reduce != TileReduce::kNone || p.index_table > 0 || p.groups != 1) return "";
  for (const TileOperand& o : p.inputs) {
    const bool full = o.row_stride == p.cols && o.col_stride == 1 && o.period == 0 && !o.vmem &&
                      o.group_stride == 0;
    if (!full && (o.row_stride != 0 || o.col_stride != 0)) return "";
  }
  std::string code;
  const int64_t body_rows = n / kTileEdge, tail = n % kTileEdge;
  auto part = [&](int64_t first, int64_t rows, int64_t cols) {
    TileProgram q = p;
    q.rows = rows, q.cols = cols;
    q.output += static_cast<uint64_t>(first * 4);
    for (TileOperand& o : q.inputs)
      if (o.col_stride == 1) o.address += static_cast<uint64_t>(first * 4), o.row_stride = cols;
    if (!code.empty()) code += assembly::DrainBarrier(mxus);
    code += assembly::ScopeKernel(TileKernel(q), "flat" + std::to_string(first > 0) + "_");
  };
  if (body_rows > 0) part(0, body_rows, kTileEdge);
  if (tail > 0) part(body_rows * kTileEdge, 1, tail);
  return code;
}

}  // namespace

std::string TileOpKernel(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  const bool iota = instr.opcode() == Opcode::kIota;
  const bool reduce = instr.opcode() == Opcode::kReduce;
  if (!(F32(instr.shape()) || (!reduce && (IsInt32(instr.shape()) || StoredPred(instr.shape())))))
    return "";
  // The result's shape, or a reduction's operand's.
  const hlo::Shape& space = reduce ? instr.operand(0)->shape() : instr.shape();
  TileProgram p;
  p.tag = instr.name();
  p.output = c.address(&instr);
  std::tie(p.rows, p.cols) = View(space);
  std::vector<const HloInstruction*> loaded;
  std::vector<DimMap> layouts;  // of each loaded value in the result
  if (iota) {
    if (!PlanIota(instr, space, p, layouts)) return "";
  } else if (reduce) {
    if (!PlanReduce(instr, space, p)) return "";
    loaded = {instr.operand(0)};
    layouts = {{}};  // read as the [rows, cols] matrix PlanReduce chose
  } else if (!PlanElementwise(instr, p, loaded, layouts)) {
    return "";
  }
  bool ints = false;
  int64_t split = 0;  // > 0: the grouped view (GroupedLayout)
  for (const DimMap& m : layouts)
    if (const int64_t g = GapSplit(m, space.dims.size()); g > 0) {
      if (split > 0 && split != g) return "";
      split = g;
    }
  if (split > 0) {
    p.groups = 1, p.rows = 1;
    for (int64_t k = 0; k < split; ++k) p.groups *= space.dims[static_cast<size_t>(k)];
    for (size_t k = static_cast<size_t>(split); k + 1 < space.dims.size(); ++k)
      p.rows *= space.dims[k];
    p.output_group_stride = p.rows * p.cols;
  }
  for (size_t i = 0; i < loaded.size(); ++i) {
    const hlo::Shape& s = loaded[i]->shape();
    if (!(F32(s) || IsInt32(s)) || loaded[i]->opcode() == Opcode::kConstant) return "";
    ints = ints || IsInt32(s);
    std::optional<TileOperand> o;
    if (reduce)  // row-major [groups, rows, cols]
      o = TileOperand{c.address(loaded[i]), p.cols, 1, false, p.rows * p.cols};
    else if (split > 0)
      o = loaded[i]->opcode() == Opcode::kIota
              ? std::nullopt
              : GroupedLayout(layouts[i], space, split, c.address(loaded[i]));
    else
      o = loaded[i]->opcode() == Opcode::kIota ? IotaLayout(*loaded[i], layouts[i], space, p)
                                               : Layout(layouts[i], space, c.address(loaded[i]));
    if (!o) return "";
    p.inputs.push_back(*o);
  }
  const int64_t tiles = (p.cols + kTileEdge - 1) / kTileEdge;  // of one row block
  const bool thin = p.rows < kTileSublanes && tiles > kTileMaxThinTiles;
  std::string k;
  try {
    k = thin ? FlatKernel(p, c.mxus) : TileKernel(p);
  } catch (const std::invalid_argument&) {
    return "";
  }
  if (k.empty()) return "";
  op.kind = KernelKind::kVpu;
  op.hbm_bytes = ByteSize(instr.shape());
  for (const HloInstruction* in : loaded) op.hbm_bytes += ByteSize(in->shape());
  op.exact = true;
  // The tiled kernel's buffers end below its index table (tile_emitter.h, Layout); the flat
  // kernel's layout is its own.
  op.vmem_bytes = thin ? -1 : static_cast<int64_t>(kTileIndexTable + kTileMaxIndex * 4);
  op.note =
      ints ? "s32 kept as bit patterns; the VPU's 32-bit integer instructions compute on them" : "";
  return k;
}

}  // namespace tpusim::lowering
