// Instruction attributes of the HLO parser: typed forms for what the compiler needs, the
// verbatim text for everything else.
#include <algorithm>
#include <array>

#include "compiler/hlo/parse/parser_impl.h"
#include "compiler/hlo/parser.h"

namespace tpusim::hlo::internal {
namespace {

enum class Kind {
  kInt,
  kFloat,
  kWord,
  kWordList,
  kIntList,
  kSlice,
  kPadding,
  kWindow,
  kDimLabels,
  kReplicaGroups,
  kPairs,
  kComputations,
  kRaw
};

struct KeyKind {
  std::string_view key;
  Kind kind;
};

constexpr std::array<KeyKind, 44> kKeys = {{
    {"dimensions", Kind::kIntList},
    {"dynamic_slice_sizes", Kind::kIntList},
    {"lhs_batch_dims", Kind::kIntList},
    {"lhs_contracting_dims", Kind::kIntList},
    {"rhs_batch_dims", Kind::kIntList},
    {"rhs_contracting_dims", Kind::kIntList},
    {"offset_dims", Kind::kIntList},
    {"collapsed_slice_dims", Kind::kIntList},
    {"start_index_map", Kind::kIntList},
    {"operand_batching_dims", Kind::kIntList},
    {"start_indices_batching_dims", Kind::kIntList},
    {"slice_sizes", Kind::kIntList},
    {"update_window_dims", Kind::kIntList},
    {"inserted_window_dims", Kind::kIntList},
    {"scatter_dims_to_operand_dims", Kind::kIntList},
    {"input_batching_dims", Kind::kIntList},
    {"scatter_indices_batching_dims", Kind::kIntList},
    {"channel_id", Kind::kInt},
    {"index", Kind::kInt},
    {"iota_dimension", Kind::kInt},
    {"feature_index", Kind::kInt},
    {"feature_group_count", Kind::kInt},
    {"batch_group_count", Kind::kInt},
    {"index_vector_dim", Kind::kInt},
    {"epsilon", Kind::kFloat},
    {"direction", Kind::kWord},
    {"type", Kind::kWord},
    {"kind", Kind::kWord},
    {"distribution", Kind::kWord},
    {"operand_precision", Kind::kWordList},
    {"slice", Kind::kSlice},
    {"padding", Kind::kPadding},
    {"window", Kind::kWindow},
    {"dim_labels", Kind::kDimLabels},
    {"replica_groups", Kind::kReplicaGroups},
    {"source_target_pairs", Kind::kPairs},
    {"to_apply", Kind::kComputations},
    {"calls", Kind::kComputations},
    {"condition", Kind::kComputations},
    {"body", Kind::kComputations},
    {"true_computation", Kind::kComputations},
    {"false_computation", Kind::kComputations},
    {"branch_computations", Kind::kComputations},
    {"select", Kind::kComputations},
}};

Kind KindOf(std::string_view key, Opcode op) {
  if (key == "scatter" && op == Opcode::kSelectAndScatter) return Kind::kComputations;
  for (const KeyKind& k : kKeys) {
    if (k.key == key) return k.kind;
  }
  return Kind::kRaw;
}

bool IsDimChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' || c == '-' || c == '>';
}

}  // namespace

bool Parser::ParseAttribute(HloInstruction* instr) {
  size_t key_pos = (SkipSpace(), pos_);
  std::string key;
  if (!ParseIdent(&key, "an attribute name") || !Expect('=', "after attribute " + key)) {
    return false;
  }
  if (instr->FindAttr(key)) return Fail(key_pos, "attribute '" + key + "' given twice");
  Kind kind = KindOf(key, instr->opcode());
  AttrValue value;
  bool ok = true;
  switch (kind) {
    case Kind::kInt: {
      int64_t v = 0;
      ok = ParseInt(&v, "for " + key);
      value = v;
      break;
    }
    case Kind::kFloat: {
      double v = 0;
      ok = ParseDouble(&v, "for " + key);
      value = v;
      break;
    }
    case Kind::kWord: {
      std::string w;
      ok = ParseIdent(&w, "a value for " + key);
      value = Word{w};
      break;
    }
    case Kind::kWordList: {
      WordList v;
      ok = ParseWordList(&v);
      value = std::move(v);
      break;
    }
    case Kind::kIntList: {
      IntList v;
      ok = ParseIntList(&v, '{', '}', key);
      value = std::move(v);
      break;
    }
    case Kind::kSlice: {
      SliceBounds v;
      ok = ParseSlice(&v);
      value = std::move(v);
      break;
    }
    case Kind::kPadding: {
      PaddingConfig v;
      ok = ParsePadding(&v);
      value = std::move(v);
      break;
    }
    case Kind::kWindow: {
      Window v;
      ok = ParseWindow(&v);
      value = std::move(v);
      break;
    }
    case Kind::kDimLabels: {
      ConvDims v;
      ok = ParseDimLabels(&v);
      value = std::move(v);
      break;
    }
    case Kind::kReplicaGroups: {
      ReplicaGroups v;
      ok = ParseReplicaGroups(&v);
      value = std::move(v);
      break;
    }
    case Kind::kPairs: {
      PairList v;
      ok = ParsePairs(&v);
      value = std::move(v);
      break;
    }
    case Kind::kComputations: {
      ComputationRefs v;
      ok = ParseComputationRefs(&v);
      value = std::move(v);
      pending_.push_back({instr, key, key_pos});
      break;
    }
    case Kind::kRaw: {
      std::string raw;
      ok = CaptureRaw(&raw);
      value = RawText{raw};
      break;
    }
  }
  if (!ok) return false;
  instr->mutable_attributes().push_back({key, std::move(value)});
  return true;
}

bool Parser::ParseWordList(WordList* out) {
  if (!Expect('{', "to start the list")) return false;
  if (TryEat('}')) return true;
  do {
    std::string w;
    if (!ParseIdent(&w, "a name in the list")) return false;
    out->push_back(w);
  } while (TryEat(','));
  return Expect('}', "to end the list");
}

bool Parser::ParseSlice(SliceBounds* out) {
  if (!Expect('{', "to start slice bounds")) return false;
  if (TryEat('}')) return true;
  do {
    SliceDim d;
    if (!Expect('[', "to start a slice bound") || !ParseInt(&d.start, "as slice start") ||
        !Expect(':', "in a slice bound") || !ParseInt(&d.limit, "as slice limit")) {
      return false;
    }
    if (TryEat(':') && !ParseInt(&d.stride, "as slice stride")) return false;
    if (!Expect(']', "to end a slice bound")) return false;
    out->push_back(d);
  } while (TryEat(','));
  return Expect('}', "to end slice bounds");
}

bool Parser::ParseDimToken(std::string_view* tok) {
  SkipSpace();
  size_t end = pos_;
  while (end < text_.size() && IsDimChar(text_[end])) ++end;
  *tok = text_.substr(pos_, end - pos_);
  if (tok->empty()) return FailHere("expected a value such as 3x3 or 1_1x1_1");
  return true;
}

}  // namespace tpusim::hlo::internal
