// HLO text emission of a Builder graph.
#include "compiler/model/emit.h"

#include <charconv>
#include <cmath>
#include <set>

#include "compiler/hlo/printer.h"

namespace tpusim::model {
namespace {

std::string JoinInts(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return "{" + out + "}";
}

// A constant as XLA prints it: f32 values in their shortest float form.
std::string ConstantText(PrimitiveType type, double v) {
  if (type == PrimitiveType::kF32 && std::isfinite(v)) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v));
    if (ec == std::errc()) return std::string(buf, end);
  }
  return hlo::FormatDouble(v);
}

// The scalar computations instructions call, named by role and type.
class Reducers {
 public:
  std::string Sum(PrimitiveType t) { return Need("sum", t); }
  std::string Max(PrimitiveType t) { return Need("max", t); }
  std::string Ge(PrimitiveType t) { return Need("ge", t); }
  std::string Of(Reducer r, PrimitiveType t) { return r == Reducer::kSum ? Sum(t) : Max(t); }
  const std::string& text() const { return text_; }

 private:
  std::string Need(const std::string& role, PrimitiveType t) {
    const std::string type(hlo::PrimitiveTypeName(t));
    const std::string name = "%" + role + "." + type;
    if (!done_.insert(name).second) return name;
    const std::string result = role == "ge" ? "pred[]" : type + "[]";
    const std::string body = role == "sum"   ? "add(%x, %y)"
                             : role == "max" ? "maximum(%x, %y)"
                                             : "compare(%x, %y), direction=GE";
    text_ += name + " (x: " + type + "[], y: " + type + "[]) -> " + result + " {\n  %x = " + type +
             "[] parameter(0)\n  %y = " + type + "[] parameter(1)\n  ROOT %r = " + result + " " +
             body + "\n}\n\n";
    return name;
  }
  std::set<std::string> done_;
  std::string text_;
};

std::string WindowText(const std::vector<hlo::WindowDim>& dims) {
  return hlo::PrintAttrValue(hlo::AttrValue(hlo::Window{dims}));
}

// The attributes after the operand list, starting with ", ".
std::string Attributes(const Node& n, const Builder& b, Reducers& reducers, int64_t& channel) {
  const PrimitiveType t = n.shape.IsTuple() ? n.shape.tuple_shapes[0].type : n.shape.type;
  switch (n.opcode) {
    case Opcode::kIota:
      return ", iota_dimension=" + std::to_string(n.dims.at(0));
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kReverse:
      return ", dimensions=" + JoinInts(n.dims);
    case Opcode::kReduce:
      return ", dimensions=" + JoinInts(n.dims) + ", to_apply=" + reducers.Of(n.reducer, t);
    case Opcode::kCompare:
      return ", direction=" + n.direction;
    case Opcode::kGetTupleElement:
      return ", index=" + std::to_string(n.index);
    case Opcode::kDot: {
      std::string s;
      if (!n.dot.lhs_batch.empty()) s += ", lhs_batch_dims=" + JoinInts(n.dot.lhs_batch);
      s += ", lhs_contracting_dims=" + JoinInts(n.dot.lhs_contracting);
      if (!n.dot.rhs_batch.empty()) s += ", rhs_batch_dims=" + JoinInts(n.dot.rhs_batch);
      return s + ", rhs_contracting_dims=" + JoinInts(n.dot.rhs_contracting);
    }
    case Opcode::kConvolution:
      return ", window=" + WindowText(n.window) + ", dim_labels=" + n.dim_labels;
    case Opcode::kReduceWindow:
      return ", window=" + WindowText(n.window) + ", to_apply=" + reducers.Max(t);
    case Opcode::kSelectAndScatter:
      return ", window=" + WindowText(n.window) + ", select=" + reducers.Ge(t) +
             ", scatter=" + reducers.Sum(t);
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormGrad:
      return ", epsilon=" + ConstantText(PrimitiveType::kF32, n.epsilon) +
             ", feature_index=" + std::to_string(n.index);
    case Opcode::kGather: {
      const Shape& indices = b.node(n.operands[1]).shape;
      const std::string rank = std::to_string(indices.rank());
      return ", offset_dims={" + rank + "}, collapsed_slice_dims={0}, start_index_map={0}" +
             ", index_vector_dim=" + rank + ", slice_sizes={1," +
             std::to_string(b.node(n.operands[0]).shape.dims[1]) + "}";
    }
    case Opcode::kScatter: {
      const std::string rank = std::to_string(b.node(n.operands[1]).shape.rank());
      return ", update_window_dims={" + rank + "}, inserted_window_dims={0}" +
             ", scatter_dims_to_operand_dims={0}, index_vector_dim=" + rank +
             ", to_apply=" + reducers.Sum(t);
    }
    case Opcode::kAllReduce: {
      std::string groups;
      for (const auto& g : n.replica_groups) groups += (groups.empty() ? "" : ",") + JoinInts(g);
      return ", channel_id=" + std::to_string(++channel) + ", replica_groups={" + groups +
             "}, to_apply=" + reducers.Of(n.reducer, t);
    }
    default:
      return "";
  }
}

}  // namespace

std::string ShapeWithLayout(const Shape& shape) {
  if (shape.IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < shape.tuple_shapes.size(); ++i) {
      out += (i ? ", " : "") + ShapeWithLayout(shape.tuple_shapes[i]);
    }
    return out + ")";
  }
  std::string out = ShapeText(shape);
  if (shape.rank() == 0) return out;
  out += "{";
  for (int64_t d = shape.rank() - 1; d >= 0; --d) {
    out += std::to_string(d) + (d ? "," : "");
  }
  return out + "}";
}

std::string EmitModule(const Builder& builder, Op root, const ModuleOptions& options) {
  Check(root.builder == &builder, "root of another builder");
  const std::vector<Node>& nodes = builder.nodes();
  std::vector<bool> live(nodes.size(), false);
  live[static_cast<size_t>(root.id)] = true;
  for (int id = root.id; id >= 0; --id) {
    if (!live[static_cast<size_t>(id)]) continue;
    for (int operand : nodes[static_cast<size_t>(id)].operands) live[operand] = true;
  }
  for (int p : builder.parameters()) live[static_cast<size_t>(p)] = true;

  auto name = [&](int id) {
    return "%" + nodes[static_cast<size_t>(id)].name + "." + std::to_string(id);
  };
  Reducers reducers;
  int64_t channel = 0;
  std::string body;
  // Parameters first (in parameter order), then the computation in graph order.
  std::vector<int> order = builder.parameters();
  for (int id = 0; id <= root.id; ++id) {
    const Node& n = nodes[static_cast<size_t>(id)];
    if (live[static_cast<size_t>(id)] && n.opcode != Opcode::kParameter) order.push_back(id);
  }
  for (int id : order) {
    const Node& n = nodes[static_cast<size_t>(id)];
    std::string operands;
    if (n.opcode == Opcode::kParameter) operands = std::to_string(n.index);
    if (n.opcode == Opcode::kConstant) operands = ConstantText(n.shape.type, n.value);
    for (int operand : n.operands) operands += (operands.empty() ? "" : ", ") + name(operand);
    body += std::string(id == root.id ? "  ROOT " : "  ") + name(id) + " = " +
            ShapeWithLayout(n.shape) + " " + std::string(hlo::OpcodeName(n.opcode)) + "(" +
            operands + ")" + Attributes(n, builder, reducers, channel) + "\n";
  }
  std::string signature, layout;
  for (int p : builder.parameters()) {
    const Shape& s = nodes[static_cast<size_t>(p)].shape;
    signature += (signature.empty() ? "" : ", ") + name(p).substr(1) + ": " + ShapeText(s);
    layout += (layout.empty() ? "" : ", ") + ShapeWithLayout(s);
  }
  const Shape& result = root.shape();
  std::string header = "HloModule " + builder.name() + ", entry_computation_layout={(" + layout +
                       ")->" + ShapeWithLayout(result) + "}";
  if (!options.donations.empty()) {
    header += ", input_output_alias={ ";
    for (size_t k = 0; k < options.donations.size(); ++k)
      header += (k ? ", {" : "{") + std::to_string(options.donations[k].first) + "}: (" +
                std::to_string(options.donations[k].second) + ", {}, may-alias)";
    header += " }";
  }
  if (options.replica_count > 1)
    header += ", replica_count=" + std::to_string(options.replica_count);
  return header + "\n\n" + reducers.text() + "ENTRY %main (" + signature + ") -> " +
         ShapeText(result) + " {\n" + body + "}\n";
}

}  // namespace tpusim::model
