// Typed forms of the HLO instruction attributes the compiler needs. Every other attribute is
// kept as its verbatim source text (RawText) so printing preserves it.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tpusim::hlo {

class HloComputation;

struct SliceDim {  // [start:limit:stride]
  int64_t start = 0, limit = 0, stride = 1;
  bool operator==(const SliceDim&) const = default;
};

struct PadDim {  // low_high_interior
  int64_t low = 0, high = 0, interior = 0;
  bool operator==(const PadDim&) const = default;
};

struct WindowDim {
  int64_t size = 1, stride = 1, pad_low = 0, pad_high = 0;
  int64_t lhs_dilate = 1, rhs_dilate = 1;
  bool reversal = false;
  bool operator==(const WindowDim&) const = default;
};

struct Window {
  std::vector<WindowDim> dims;
  bool operator==(const Window&) const = default;
};

// Convolution dimension numbers from dim_labels=b01f_01io->b01f. Spatial dimensions are
// listed in the order of their labels 0, 1, 2, ...
struct ConvDims {
  std::string labels;  // as written, e.g. "b01f_01io->b01f"
  int64_t input_batch = 0, input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> output_spatial;
  bool operator==(const ConvDims&) const = default;
};

// replica_groups={{0,1},{2,3}}, the iota form [2,4]<=[4,2]T(1,0) or Shardy's mesh form
// mesh['x'=2,'y'=4] {'y'}, always expanded.
struct ReplicaGroups {
  std::vector<std::vector<int64_t>> groups;
  bool iota = false;  // written in iota form; the fields below say how
  std::vector<int64_t> iota_group_dims, iota_reshape_dims, iota_transpose;
  std::string mesh;  // the mesh form as written, printed back verbatim; empty otherwise
  bool operator==(const ReplicaGroups&) const = default;
};

struct ComputationRefs {                      // to_apply=%add, branch_computations={%a, %b}
  std::vector<std::string> names;             // as written, without '%'
  std::vector<HloComputation*> computations;  // resolved by the parser
  bool braced = false;
  bool operator==(const ComputationRefs&) const = default;
};

struct Word {  // a bare identifier value: direction=LT, kind=kLoop
  std::string text;
  bool operator==(const Word&) const = default;
};

struct RawText {  // verbatim source text of an attribute the compiler does not interpret
  std::string text;
  bool operator==(const RawText&) const = default;
};

using IntList = std::vector<int64_t>;
using WordList = std::vector<std::string>;                  // operand_precision={default,high}
using PairList = std::vector<std::pair<int64_t, int64_t>>;  // source_target_pairs
using SliceBounds = std::vector<SliceDim>;
using PaddingConfig = std::vector<PadDim>;

using AttrValue = std::variant<int64_t, double, Word, WordList, IntList, SliceBounds, PaddingConfig,
                               Window, ConvDims, ReplicaGroups, PairList, ComputationRefs, RawText>;

struct Attribute {
  std::string key;
  AttrValue value;
};

}  // namespace tpusim::hlo
