// TPU layout assignment and padding accounting; see layout.h.
#include "compiler/passes/layout.h"

#include <algorithm>

namespace tpusim::passes {
namespace {

using hlo::Layout;
using hlo::Shape;

constexpr int64_t kLanes = 128;

int64_t ElementBytes(hlo::PrimitiveType t) { return std::max(1, hlo::PrimitiveTypeBits(t) / 8); }

int64_t RoundUp(int64_t v, int64_t m) { return m <= 1 ? v : (v + m - 1) / m * m; }

// Assigns layouts inside `s`; true if anything changed.
bool AssignShape(Shape& s) {
  if (s.IsTuple()) {
    bool changed = false;
    for (Shape& e : s.tuple_shapes) changed |= AssignShape(e);
    return changed;
  }
  if (s.rank() == 0 || (s.layout && !s.layout->tiles.empty())) return false;
  s.layout = TpuLayout(s);
  return true;
}

// Rewrites the header's entry_computation_layout, when it has one, from the entry's
// parameters and root so it states the assigned layouts.
void UpdateEntryLayout(hlo::HloModule& m) {
  if (m.entry_computation_layout.empty() || !m.entry() || !m.entry()->root()) return;
  std::string text = "(";
  for (const hlo::HloInstruction* p : m.entry()->parameters()) {
    text += (text.size() > 1 ? ", " : "") + p->shape().ToString();
  }
  text += ")->" + m.entry()->root()->shape().ToString();
  m.entry_computation_layout = text;
  for (hlo::Attribute& a : m.header) {
    if (a.key == "entry_computation_layout") a.value = hlo::RawText{"{" + text + "}"};
  }
}

}  // namespace

namespace {

Layout TiledLayout(const Shape& array, Layout l);

// For a rank >= 3 array in the default (descending) order whose minor dimension wastes
// lanes, the order with one dimension moved to be most minor that pads least, as XLA's TPU
// layout assignment makes e.g. the batch minor for NHWC activations with 3 or 64 channels.
std::vector<int64_t> LeastPaddedOrder(const Shape& array, std::vector<int64_t> order) {
  const int64_t rank = array.rank();
  if (rank < 3 || array.dims[order[0]] % kLanes == 0) return order;
  auto padded = [&](const std::vector<int64_t>& o) {
    Layout l;
    l.minor_to_major = o;
    Shape s = array;
    s.layout = TiledLayout(array, l);
    return PaddedBytes(s);
  };
  std::vector<int64_t> best = order;
  int64_t best_bytes = padded(order);
  for (int64_t k = 1; k < rank; ++k) {
    std::vector<int64_t> o = order;
    std::rotate(o.begin(), o.begin() + k, o.begin() + k + 1);  // dimension o[k] to the front
    if (int64_t b = padded(o); b < best_bytes) best = o, best_bytes = b;
  }
  return best;
}

}  // namespace

Layout TpuLayout(const Shape& array) {
  Layout l;
  if (array.layout) l = *array.layout;
  int64_t rank = array.rank();
  std::vector<int64_t> descending;
  for (int64_t d = rank - 1; d >= 0; --d) descending.push_back(d);
  if (static_cast<int64_t>(l.minor_to_major.size()) != rank) l.minor_to_major = descending;
  if (l.minor_to_major == descending && l.tiles.empty())
    l.minor_to_major = LeastPaddedOrder(array, descending);
  return TiledLayout(array, l);
}

namespace {

Layout TiledLayout(const Shape& array, Layout l) {
  const int64_t rank = array.rank();
  l.tiles.clear();
  if (rank == 0) return l;
  if (rank == 1) {
    l.tiles.push_back(hlo::Tile{{kLanes}});
    return l;
  }
  int64_t second_minor = array.dims[l.minor_to_major[1]];
  int64_t rows = second_minor <= 2 ? 2 : second_minor <= 4 ? 4 : 8;
  l.tiles.push_back(hlo::Tile{{rows, kLanes}});
  int bits = hlo::PrimitiveTypeBits(array.type);
  if (bits == 16) l.tiles.push_back(hlo::Tile{{2, 1}});
  if (bits == 8) l.tiles.push_back(hlo::Tile{{4, 1}});
  return l;
}

}  // namespace

int64_t LogicalBytes(const Shape& s) {
  if (s.IsTuple()) {
    int64_t n = 0;
    for (const Shape& e : s.tuple_shapes) n += LogicalBytes(e);
    return n;
  }
  return std::max<int64_t>(s.ElementCount(), 0) * ElementBytes(s.type);
}

int64_t PaddedBytes(const Shape& s) {
  if (s.IsTuple()) {
    int64_t n = 0;
    for (const Shape& e : s.tuple_shapes) n += PaddedBytes(e);
    return n;
  }
  if (!s.layout || s.layout->tiles.empty() ||
      static_cast<int64_t>(s.layout->minor_to_major.size()) != s.rank()) {
    return LogicalBytes(s);
  }
  // Physical dimensions, most minor first; the tile covers the most minor ones.
  const std::vector<int64_t>& tile = s.layout->tiles.front().dims;
  int64_t n = ElementBytes(s.type);
  for (size_t k = 0; k < s.layout->minor_to_major.size(); ++k) {
    int64_t size = s.dims[s.layout->minor_to_major[k]];
    if (k < tile.size()) size = RoundUp(size, tile[tile.size() - 1 - k]);
    n *= size;
  }
  return n;
}

const PaddingEntry* PaddingReport::Find(const std::string& name) const {
  for (const PaddingEntry& e : ops) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

PaddingReport ComputePaddingReport(const hlo::HloModule& module) {
  PaddingReport r;
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      PaddingEntry e;
      e.computation = c->name();
      e.name = i->name();
      e.shape = i->shape().ToString();
      e.logical_bytes = LogicalBytes(i->shape());
      e.padded_bytes = PaddedBytes(i->shape());
      if (e.padded_bytes > 0) {
        e.waste_percent = 100.0 * static_cast<double>(e.padded_bytes - e.logical_bytes) /
                          static_cast<double>(e.padded_bytes);
      }
      r.logical_bytes += e.logical_bytes;
      r.padded_bytes += e.padded_bytes;
      r.ops.push_back(std::move(e));
    }
  }
  return r;
}

hlo::Result<bool> LayoutAssignmentPass::Run(hlo::HloModule& module) {
  bool changed = false;
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) changed |= AssignShape(i->mutable_shape());
  }
  if (changed) UpdateEntryLayout(module);
  report_ = ComputePaddingReport(module);
  return changed;
}

}  // namespace tpusim::passes
