// Structured attribute values of the HLO parser: padding, window, dim_labels, replica
// groups, source-target pairs and computation references.
#include <charconv>

#include "compiler/hlo/parse/parser_impl.h"
#include "compiler/hlo/parser.h"

namespace tpusim::hlo::internal {
namespace {

constexpr int64_t kMaxIotaElements = int64_t{1} << 20;

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t k = s.find(sep, start);
    out.push_back(s.substr(start, k == std::string_view::npos ? k : k - start));
    if (k == std::string_view::npos) return out;
    start = k + 1;
  }
}

bool ToInt(std::string_view s, int64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// Parses "a_b_cxd_e_f" into groups of 1..max_parts integers per 'x'-separated dimension.
bool SplitDims(std::string_view tok, size_t min_parts, size_t max_parts,
               std::vector<std::vector<int64_t>>* out) {
  for (std::string_view dim : Split(tok, 'x')) {
    std::vector<int64_t> parts;
    for (std::string_view p : Split(dim, '_')) {
      int64_t v;
      if (!ToInt(p, &v)) return false;
      parts.push_back(v);
    }
    if (parts.size() < min_parts || parts.size() > max_parts) return false;
    out->push_back(std::move(parts));
  }
  return true;
}

// Maps each label letter/digit of one side of dim_labels to its dimension index.
bool ReadLabels(std::string_view s, char a, char b, int64_t* pa, int64_t* pb,
                std::vector<int64_t>* spatial) {
  *pa = *pb = -1;
  size_t n = 0;
  for (char c : s) n += (c >= '0' && c <= '9');
  spatial->assign(n, -1);
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    int64_t* slot = c == a ? pa : c == b ? pb : nullptr;
    if (c >= '0' && c <= '9') {
      size_t d = static_cast<size_t>(c - '0');
      if (d >= n) return false;
      slot = &(*spatial)[d];
    }
    if (!slot || *slot != -1) return false;
    *slot = static_cast<int64_t>(i);
  }
  return *pa >= 0 && *pb >= 0;
}

}  // namespace

bool Parser::ParsePadding(PaddingConfig* out) {
  size_t start = (SkipSpace(), pos_);
  std::string_view tok;
  if (!ParseDimToken(&tok)) return false;
  std::vector<std::vector<int64_t>> dims;
  if (!SplitDims(tok, 2, 3, &dims)) {
    return Fail(start, "bad padding '" + std::string(tok) + "', expected low_high[_interior]x...");
  }
  pos_ += tok.size();
  for (const auto& d : dims) out->push_back({d[0], d[1], d.size() > 2 ? d[2] : 0});
  return true;
}

bool Parser::ParseWindow(Window* out) {
  if (!Expect('{', "to start the window")) return false;
  size_t start = pos_;
  while (!TryEat('}')) {
    size_t key_pos = (SkipSpace(), pos_);
    std::string key;
    std::string_view tok;
    if (!ParseIdent(&key, "a window field or '}'") || !Expect('=', "after " + key) ||
        !ParseDimToken(&tok)) {
      return false;
    }
    bool pad = key == "pad";
    std::vector<std::vector<int64_t>> dims;
    if (!SplitDims(tok, pad ? 2 : 1, pad ? 2 : 1, &dims)) {
      return Fail(key_pos, "bad window " + key + " '" + std::string(tok) + "'");
    }
    pos_ += tok.size();
    if (out->dims.empty()) out->dims.resize(dims.size());
    if (dims.size() != out->dims.size()) {
      return Fail(key_pos, "window " + key + " has " + std::to_string(dims.size()) +
                               " dimensions, expected " + std::to_string(out->dims.size()));
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      WindowDim& w = out->dims[i];
      int64_t v = dims[i][0];
      if (key == "size")
        w.size = v;
      else if (key == "stride")
        w.stride = v;
      else if (key == "lhs_dilate")
        w.lhs_dilate = v;
      else if (key == "rhs_dilate")
        w.rhs_dilate = v;
      else if (key == "rhs_reversal")
        w.reversal = v != 0;
      else if (pad)
        w.pad_low = v, w.pad_high = dims[i][1];
      else
        return Fail(key_pos, "unknown window field '" + key + "'");
    }
    if (pos_ >= text_.size()) return Fail(start, "unterminated window");
  }
  return true;
}

bool Parser::ParseDimLabels(ConvDims* out) {
  size_t start = (SkipSpace(), pos_);
  std::string_view tok;
  if (!ParseDimToken(&tok)) return false;
  pos_ += tok.size();
  out->labels = std::string(tok);
  auto bad = [&](const std::string& why) {
    return Fail(start, "bad dim_labels '" + out->labels + "': " + why);
  };
  size_t arrow = tok.find("->");
  if (arrow == std::string_view::npos) return bad("expected input_kernel->output");
  std::vector<std::string_view> lhs = Split(tok.substr(0, arrow), '_');
  std::string_view output = tok.substr(arrow + 2);
  if (lhs.size() != 2) return bad("expected input_kernel->output");
  if (!ReadLabels(lhs[0], 'b', 'f', &out->input_batch, &out->input_feature, &out->input_spatial)) {
    return bad("the input needs one b, one f and spatial digits 0..n-1");
  }
  if (!ReadLabels(lhs[1], 'i', 'o', &out->kernel_input_feature, &out->kernel_output_feature,
                  &out->kernel_spatial)) {
    return bad("the kernel needs one i, one o and spatial digits 0..n-1");
  }
  if (!ReadLabels(output, 'b', 'f', &out->output_batch, &out->output_feature,
                  &out->output_spatial)) {
    return bad("the output needs one b, one f and spatial digits 0..n-1");
  }
  if (out->input_spatial.size() != out->kernel_spatial.size() ||
      out->input_spatial.size() != out->output_spatial.size()) {
    return bad("input, kernel and output have different numbers of spatial dimensions");
  }
  return true;
}

bool Parser::ParseReplicaGroups(ReplicaGroups* out) {
  size_t start = (SkipSpace(), pos_);
  if (PeekIdent() == "mesh") return ParseMeshReplicaGroups(out);
  if (PeekRaw() != '[') {
    if (!Expect('{', "to start replica_groups")) return false;
    if (TryEat('}')) return true;
    do {
      std::vector<int64_t> g;
      if (!ParseIntList(&g, '{', '}', "a replica group")) return false;
      out->groups.push_back(std::move(g));
    } while (TryEat(','));
    return Expect('}', "to end replica_groups");
  }
  out->iota = true;
  if (!ParseIntList(&out->iota_group_dims, '[', ']', "the replica group dimensions") ||
      !Expect('<', "in iota replica groups [groups,size]<=[dims]") ||
      !Expect('=', "in iota replica groups [groups,size]<=[dims]") ||
      !ParseIntList(&out->iota_reshape_dims, '[', ']', "the iota dimensions")) {
    return false;
  }
  if (PeekRaw() == 'T') {
    ++pos_;
    if (!ParseIntList(&out->iota_transpose, '(', ')', "the iota transpose")) return false;
  }
  auto product = [](const std::vector<int64_t>& v) {
    int64_t n = 1;
    for (int64_t d : v) {
      if (d <= 0 || d > kMaxIotaElements || n * d > kMaxIotaElements) return int64_t{-1};
      n *= d;
    }
    return n;
  };
  int64_t total = product(out->iota_reshape_dims);
  if (out->iota_group_dims.size() != 2 || total < 0 || product(out->iota_group_dims) != total) {
    return Fail(start,
                "iota replica groups need [groups,size] with groups*size equal to the "
                "product of the iota dimensions (at most 2^20 devices)");
  }
  size_t rank = out->iota_reshape_dims.size();
  std::vector<int64_t> perm = out->iota_transpose;
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (perm.size() != rank || p < 0 || static_cast<size_t>(p) >= rank || seen[p]) {
      return Fail(start, "iota replica groups: T(...) is not a permutation of the dimensions");
    }
    seen[p] = true;
  }
  // Walk the transposed array in row-major order; each element is its source's linear index.
  std::vector<int64_t> idx(rank, 0), values;
  for (int64_t n = 0; n < total; ++n) {
    std::vector<int64_t> src(rank);
    for (size_t i = 0; i < rank; ++i) src[perm[i]] = idx[i];
    int64_t linear = 0;
    for (size_t d = 0; d < rank; ++d) linear = linear * out->iota_reshape_dims[d] + src[d];
    values.push_back(linear);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < out->iota_reshape_dims[perm[i]]) break;
      idx[i] = 0;
    }
  }
  int64_t size = out->iota_group_dims[1];
  for (int64_t g = 0; g < out->iota_group_dims[0]; ++g) {
    out->groups.emplace_back(values.begin() + g * size, values.begin() + (g + 1) * size);
  }
  return true;
}

bool Parser::ParsePairs(PairList* out) {
  if (!Expect('{', "to start source_target_pairs")) return false;
  if (TryEat('}')) return true;
  do {
    std::vector<int64_t> p;
    size_t ppos = (SkipSpace(), pos_);
    if (!ParseIntList(&p, '{', '}', "a source-target pair")) return false;
    if (p.size() != 2) return Fail(ppos, "a source-target pair needs two ids");
    out->emplace_back(p[0], p[1]);
  } while (TryEat(','));
  return Expect('}', "to end source_target_pairs");
}

bool Parser::ParseComputationRefs(ComputationRefs* out) {
  out->braced = TryEat('{');
  do {
    std::string name;
    if (!ParseName(&name, "a computation name")) return false;
    out->names.push_back(name);
  } while (out->braced && TryEat(','));
  return !out->braced || Expect('}', "to end the computation list");
}

}  // namespace tpusim::hlo::internal
