// Parsing and printing of shardings and of Shardy's mesh form of replica groups.
#include "compiler/hlo/sharding.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>

namespace tpusim::hlo {
namespace {

constexpr int64_t kMaxDevices = 1 << 20;

// A cursor over attribute text; every method returns false after recording an error.
class Reader {
 public:
  explicit Reader(std::string_view t) : t_(t) {}
  void Space() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  char Peek() { return Space(), p_ < t_.size() ? t_[p_] : '\0'; }
  bool Eat(char c) { return Peek() == c ? (++p_, true) : false; }
  bool Expect(char c) { return Eat(c) || Error(std::string("expected '") + c + "'"); }
  bool Word(std::string_view w) {
    Space();
    if (t_.substr(p_, w.size()) != w) return false;
    size_t e = p_ + w.size();
    if (e < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[e])) || t_[e] == '_')) {
      return false;
    }
    p_ = e;
    return true;
  }
  bool Int(int64_t* v) {
    Space();
    size_t s = p_;
    bool neg = p_ < t_.size() && t_[p_] == '-';
    if (neg) ++p_;
    int64_t n = 0;
    while (p_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[p_]))) {
      if (n > kMaxDevices * 1024) return Error("number too large");
      n = n * 10 + (t_[p_++] - '0');
    }
    if (p_ == s + (neg ? 1 : 0)) return Error("expected a number");
    *v = neg ? -n : n;
    return true;
  }
  bool IntList(std::vector<int64_t>* out, char open, char close) {
    if (!Expect(open)) return false;
    if (Eat(close)) return true;
    do {
      int64_t v = 0;
      if (!Int(&v)) return false;
      out->push_back(v);
    } while (Eat(','));
    return Expect(close);
  }
  bool Quoted(std::string* out) {  // 'x'
    if (!Expect('\'')) return false;
    size_t e = t_.find('\'', p_);
    if (e == std::string_view::npos) return Error("unterminated axis name");
    *out = std::string(t_.substr(p_, e - p_));
    p_ = e + 1;
    return true;
  }
  bool Error(const std::string& what) {
    if (error_.empty()) error_ = what + " at offset " + std::to_string(p_);
    return false;
  }
  bool AtEnd() { return Peek() == '\0'; }
  size_t pos() const { return p_; }
  void Seek(size_t p) { p_ = p; }
  const std::string& error() const { return error_; }

 private:
  std::string_view t_;
  size_t p_ = 0;
  std::string error_;
};

int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

// Row-major walk of iota(product(reshape)) reshaped to `reshape` and transposed by `perm`.
std::vector<int64_t> ExpandIota(const std::vector<int64_t>& reshape,
                                const std::vector<int64_t>& perm) {
  size_t rank = reshape.size();
  std::vector<int64_t> strides(rank, 1), dims(rank), out;
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * reshape[i];
  for (size_t i = 0; i < rank; ++i) dims[i] = reshape[perm[i]];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t n = 0, total = Product(reshape); n < total; ++n) {
    int64_t linear = 0;
    for (size_t i = 0; i < rank; ++i) linear += idx[i] * strides[perm[i]];
    out.push_back(linear);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

bool ValidDims(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) {
    if (d <= 0 || d > kMaxDevices || n * d > kMaxDevices) return false;
    n *= d;
  }
  return true;
}

// [dims]<=[reshape]T(perm) after `[dims]` was read; or an explicit device list.
bool ReadDevices(Reader& r, const std::vector<int64_t>& dims, std::vector<int64_t>* out) {
  if (r.Eat('<')) {
    std::vector<int64_t> reshape, perm;
    if (!r.Expect('=') || !r.IntList(&reshape, '[', ']')) return false;
    if (r.Peek() == 'T' && (r.Eat('T'), !r.IntList(&perm, '(', ')'))) return false;
    if (!ValidDims(reshape) || Product(reshape) != Product(dims)) {
      return r.Error("the iota dimensions' product differs from the tiles'");
    }
    if (perm.empty()) perm.resize(reshape.size()), std::iota(perm.begin(), perm.end(), 0);
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] != static_cast<int64_t>(i) || perm.size() != reshape.size()) {
        return r.Error("T(...) is not a permutation of the iota dimensions");
      }
    }
    *out = ExpandIota(reshape, perm);
    return true;
  }
  int depth = 0;  // explicit ids, flat or braced
  while (static_cast<int64_t>(out->size()) < Product(dims) || depth > 0) {
    if (r.Eat('{')) {
      ++depth;
    } else if (depth > 0 && r.Eat('}')) {
      --depth;
    } else if (!r.Eat(',')) {
      char c = r.Peek();
      if (!(c >= '0' && c <= '9')) break;
      int64_t v = 0;
      if (!r.Int(&v)) return false;
      out->push_back(v);
    }
  }
  if (static_cast<int64_t>(out->size()) != Product(dims)) {
    return r.Error("the device list does not fill the tiles");
  }
  return true;
}

struct Mesh {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::vector<int64_t> devices;  // row-major over `sizes`
  int64_t Axis(const std::string& n) const {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == n) return static_cast<int64_t>(i);
    }
    return -1;
  }
};

// mesh['a'=2,'b'=4] with an optional ", device_ids=(...)".
bool ReadMesh(Reader& r, Mesh* m) {
  if (!r.Word("mesh")) return r.Error("expected 'mesh'");
  if (!r.Expect('[')) return false;
  if (!r.Eat(']')) {
    do {
      std::string name;
      int64_t size = 0;
      if (!r.Quoted(&name) || !r.Expect('=') || !r.Int(&size)) return false;
      if (m->Axis(name) >= 0) return r.Error("mesh axis '" + name + "' given twice");
      m->names.push_back(name);
      m->sizes.push_back(size);
    } while (r.Eat(','));
    if (!r.Expect(']')) return false;
  }
  if (!ValidDims(m->sizes)) return r.Error("mesh axis sizes must be positive (at most 2^20)");
  std::vector<int64_t> ids;
  r.Space();
  const size_t before_comma = r.pos();
  if (r.Eat(',') && !r.Word("device_ids")) r.Seek(before_comma);  // the next field's comma
  if (r.pos() != before_comma) {
    std::vector<int64_t> dims = {Product(m->sizes)};
    if (!r.Expect('=') || !r.Expect('(')) {
      return r.Error("expected device_ids=(...) after the mesh");
    }
    if (r.Peek() == '[') {
      std::vector<int64_t> shape;
      if (!r.IntList(&shape, '[', ']')) return false;
      dims = shape;
    }
    if (!ReadDevices(r, dims, &ids) || !r.Expect(')')) return false;
  }
  if (ids.empty()) {
    ids.resize(Product(m->sizes));
    std::iota(ids.begin(), ids.end(), 0);
  }
  std::vector<int64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int64_t>(i)) {
      return r.Error("mesh device ids are not a permutation of 0..n-1");
    }
  }
  m->devices = std::move(ids);
  return true;
}

// The mesh's devices with its axes transposed to `order` (row-major).
std::vector<int64_t> Transposed(const Mesh& m, const std::vector<int64_t>& order) {
  std::vector<int64_t> perm_ids = ExpandIota(m.sizes, order), out;
  for (int64_t i : perm_ids) out.push_back(m.devices[i]);
  return out;
}

}  // namespace

bool IsShardingCustomCall(std::string_view target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape" || target.substr(0, 8) == "xla.sdy.";
}

Result<std::vector<std::vector<int64_t>>> ExpandMeshReplicaGroups(std::string_view text) {
  Reader r(text);
  Mesh m;
  struct Ref {
    int64_t axis, pre, size;
  };
  std::vector<Ref> refs;
  auto fail = [&](const std::string& why) {
    r.Error(why);
    return Status::Error("bad mesh replica groups '" + std::string(text) + "': " + r.error());
  };
  if (!ReadMesh(r, &m) || !r.Expect('{')) return fail("");
  if (!r.Eat('}')) {
    do {
      std::string name;
      if (!r.Quoted(&name)) return fail("");
      int64_t axis = m.Axis(name);
      if (axis < 0) return fail("axis '" + name + "' is not in the mesh");
      Ref ref{axis, 1, m.sizes[axis]};
      if (r.Eat(':')) {  // sub-axis 'x':(pre)size
        if (!r.Expect('(') || !r.Int(&ref.pre) || !r.Expect(')') || !r.Int(&ref.size)) {
          return fail("");
        }
        if (ref.pre < 1 || ref.size < 2 || m.sizes[axis] % (ref.pre * ref.size) != 0) {
          return fail("sub-axis of '" + name + "' does not divide the axis");
        }
      }
      refs.push_back(ref);
    } while (r.Eat(','));
    if (!r.Expect('}')) return fail("");
  }
  if (!r.AtEnd()) return fail("unexpected text after the groups");
  // Split each mesh axis into the sub-axes the refs name (sorted by pre-size), padding the
  // gaps; the refs' pieces are the axes each group spans.
  std::vector<int64_t> sizes, grouped(refs.size(), -1);
  for (int64_t axis = 0; axis < static_cast<int64_t>(m.sizes.size()); ++axis) {
    std::vector<size_t> mine;
    for (size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].axis == axis) mine.push_back(i);
    }
    std::sort(mine.begin(), mine.end(),
              [&](size_t a, size_t b) { return refs[a].pre < refs[b].pre; });
    int64_t prefix = 1;
    for (size_t i : mine) {
      if (refs[i].pre % prefix != 0) return fail("sub-axes of one axis overlap");
      if (refs[i].pre != prefix) sizes.push_back(refs[i].pre / prefix);
      grouped[i] = static_cast<int64_t>(sizes.size());
      sizes.push_back(refs[i].size);
      prefix = refs[i].pre * refs[i].size;
    }
    if (prefix > m.sizes[axis] || m.sizes[axis] % prefix != 0) {
      return fail("sub-axes of one axis overlap");
    }
    if (prefix != m.sizes[axis]) sizes.push_back(m.sizes[axis] / prefix);
  }
  std::vector<int64_t> order;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (std::find(grouped.begin(), grouped.end(), d) == grouped.end()) order.push_back(d);
  }
  int64_t group_size = 1;
  for (int64_t g : grouped) order.push_back(g), group_size *= sizes[g];
  if (std::set<int64_t>(grouped.begin(), grouped.end()).size() != grouped.size()) {
    return fail("an axis is named twice");
  }
  Mesh split{{}, sizes, m.devices};
  std::vector<int64_t> flat = Transposed(split, order);
  std::vector<std::vector<int64_t>> groups;
  for (size_t i = 0; i < flat.size(); i += group_size) {
    groups.emplace_back(flat.begin() + i, flat.begin() + i + group_size);
  }
  return groups;
}

namespace {

bool ReadSharding(Reader& r, HloSharding* out, int depth);

// {mesh['x'=8], [{'x'}, {}]} or {mesh[], replicated}; the opening brace is read.
bool ReadMeshSharding(Reader& r, HloSharding* out) {
  Mesh m;
  if (!ReadMesh(r, &m) || !r.Expect(',')) return false;
  if (r.Word("replicated")) return out->kind = HloSharding::Kind::kReplicated, r.Expect('}');
  if (r.Word("manual")) return out->kind = HloSharding::Kind::kManual, r.Expect('}');
  if (r.Word("maximal")) return r.Error("maximal mesh shardings are not supported");
  std::vector<int64_t> order;
  std::vector<bool> used(m.sizes.size(), false);
  if (!r.Expect('[')) return false;
  out->kind = HloSharding::Kind::kTiled;
  if (!r.Eat(']')) {
    do {
      if (!r.Expect('{')) return false;
      int64_t shards = 1;
      if (r.Eat('?')) {  // an open dimension with no axes yet: unsharded
        if (!r.Expect('}')) return false;
      } else if (!r.Eat('}')) {
        do {
          std::string name;
          if (!r.Quoted(&name)) return false;
          int64_t axis = m.Axis(name);
          if (axis < 0 || used[axis]) return r.Error("axis '" + name + "' unknown or used twice");
          if (r.Peek() == ':') return r.Error("sub-axis shardings are not supported");
          used[axis] = true;
          order.push_back(axis);
          shards *= m.sizes[axis];
        } while (r.Eat(','));
        r.Eat('?');
        if (!r.Expect('}')) return false;
      }
      out->tile_dims.push_back(shards);
    } while (r.Eat(','));
    if (!r.Expect(']')) return false;
  }
  int64_t copies = 1;
  for (size_t a = 0; a < m.sizes.size(); ++a) {
    if (!used[a]) order.push_back(static_cast<int64_t>(a)), copies *= m.sizes[a];
  }
  if (copies > 1) out->tile_dims.push_back(copies), out->last_tile_dim_replicate = true;
  out->devices = Transposed(m, order);
  while (r.Eat(',')) {  // replicated={...}, unreduced={...}: explicit forms of the default
    if (!(r.Word("replicated") || r.Word("unreduced"))) {
      return r.Error("expected replicated={...} or unreduced={...}");
    }
    if (!r.Expect('=') || !r.Expect('{')) return false;
    while (!r.Eat('}')) {
      std::string name;
      if (!r.Quoted(&name)) return false;
      r.Eat(',');
    }
  }
  return r.Expect('}');
}

bool ReadSharding(Reader& r, HloSharding* out, int depth) {
  if (depth > 64 || !r.Expect('{')) return depth <= 64 || r.Error("nesting too deep");
  if (r.Peek() == '{' || r.Peek() == '}') {  // tuple
    out->kind = HloSharding::Kind::kTuple;
    if (r.Eat('}')) return true;
    do {
      HloSharding e;
      if (!ReadSharding(r, &e, depth + 1)) return false;
      out->elements.push_back(std::move(e));
    } while (r.Eat(','));
    return r.Expect('}');
  }
  if (r.Word("manual")) return out->kind = HloSharding::Kind::kManual, r.Expect('}');
  if (r.Word("replicated")) return r.Expect('}');
  if (r.Word("maximal")) {
    out->kind = HloSharding::Kind::kMaximal;
    if (!r.Word("device") || !r.Expect('=') || !r.Int(&out->device)) return false;
    return r.Expect('}');
  }
  if (r.Peek() == 'm') return ReadMeshSharding(r, out);
  if (!r.Word("devices") || !r.Expect('=')) {
    return r.Error("expected replicated, manual, maximal, devices= or mesh");
  }
  out->kind = HloSharding::Kind::kTiled;
  if (!r.IntList(&out->tile_dims, '[', ']')) return false;
  if (out->tile_dims.empty() || !ValidDims(out->tile_dims)) {
    return r.Error("tile dimensions must be positive (at most 2^20 devices)");
  }
  if (!ReadDevices(r, out->tile_dims, &out->devices)) return false;
  if (r.Word("last_tile_dim_replicate")) {
    out->last_tile_dim_replicate = true;
  } else if (r.Word("last_tile_dims")) {
    return r.Error("last_tile_dims={...} (manual or unreduced subgroups) is not supported");
  }
  r.Eat(',');
  return r.Expect('}');
}

// A tiling that splits no dimension (every device holds a copy of the one tile, as Shardy
// prints a replicated value: {mesh['x'=8], [{}, {}]}) is replicated.
void Normalize(HloSharding& s) {
  for (HloSharding& e : s.elements) Normalize(e);
  if (s.kind != HloSharding::Kind::kTiled) return;
  const size_t rank = s.tile_dims.size() - (s.last_tile_dim_replicate ? 1 : 0);
  for (size_t d = 0; d < rank; ++d) {
    if (s.tile_dims[d] != 1) return;
  }
  s = HloSharding::Replicated();
}

}  // namespace

Result<HloSharding> ParseSharding(std::string_view text) {
  Reader r(text);
  HloSharding s;
  if (!ReadSharding(r, &s, 0) || !r.AtEnd()) {
    if (r.error().empty()) r.Error("unexpected text after the sharding");
    return Status::Error("bad sharding '" + std::string(text) + "': " + r.error());
  }
  Normalize(s);
  return s;
}

int64_t HloSharding::ShardsAlong(size_t dim) const {
  if (kind != Kind::kTiled) return 1;
  size_t rank = tile_dims.size() - (last_tile_dim_replicate ? 1 : 0);
  return dim < rank ? tile_dims[dim] : 1;
}

std::vector<int64_t> HloSharding::TileIndexOf(int64_t dev) const {
  auto it = std::find(devices.begin(), devices.end(), dev);
  if (kind != Kind::kTiled || it == devices.end()) return {};
  int64_t linear = it - devices.begin();
  std::vector<int64_t> idx(tile_dims.size());
  for (size_t i = tile_dims.size(); i-- > 0;)
    idx[i] = linear % tile_dims[i], linear /= tile_dims[i];
  if (last_tile_dim_replicate) idx.pop_back();
  return idx;
}

std::string HloSharding::ToString() const {
  auto join = [](const std::vector<int64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
  };
  switch (kind) {
    case Kind::kReplicated:
      return "{replicated}";
    case Kind::kManual:
      return "{manual}";
    case Kind::kMaximal:
      return "{maximal device=" + std::to_string(device) + "}";
    case Kind::kTuple: {
      std::string s = "{";
      for (size_t i = 0; i < elements.size(); ++i) s += (i ? ", " : "") + elements[i].ToString();
      return s + "}";
    }
    case Kind::kTiled:
      break;
  }
  std::vector<int64_t> iota(devices.size());
  std::iota(iota.begin(), iota.end(), 0);
  std::string s = "{devices=[" + join(tile_dims) + "]";
  s += devices == iota ? "<=[" + std::to_string(devices.size()) + "]" : join(devices);
  return s + (last_tile_dim_replicate ? " last_tile_dim_replicate}" : "}");
}

}  // namespace tpusim::hlo
