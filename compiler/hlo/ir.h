// The HLO IR of tpusim's compiler: modules own computations, computations own instructions.
// Operands are raw pointers to instructions of the same computation.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "compiler/hlo/attributes.h"
#include "compiler/hlo/opcode.h"
#include "compiler/hlo/shape.h"
#include "compiler/hlo/sharding.h"
#include "compiler/hlo/stack_frames.h"

namespace tpusim::hlo {

class HloComputation;

// Values of a constant, flattened in row-major order. Integral and pred constants use
// `ints` (pred: 0/1), floating ones use `floats` (c64: real, imag pairs).
struct Literal {
  bool elided = false;  // written as {...}
  std::vector<int64_t> ints;
  std::vector<double> floats;
  bool operator==(const Literal&) const = default;
};

class HloInstruction {
 public:
  HloInstruction(std::string name, Opcode opcode, Shape shape)
      : name_(std::move(name)), opcode_(opcode), shape_(std::move(shape)) {}

  const std::string& name() const { return name_; }  // without '%'
  Opcode opcode() const { return opcode_; }
  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }
  int64_t id() const { return id_; }  // unique within the module, in parse order
  void set_id(int64_t id) { id_ = id; }
  bool is_root() const;
  HloComputation* parent() const { return parent_; }
  void set_parent(HloComputation* c) { parent_ = c; }

  const std::vector<HloInstruction*>& operands() const { return operands_; }
  HloInstruction* operand(size_t i) const { return operands_[i]; }
  size_t operand_count() const { return operands_.size(); }
  void AddOperand(HloInstruction* op) { operands_.push_back(op); }
  // Operand `i` becomes `op` (the caller keeps the computation's order topological).
  void ReplaceOperand(size_t i, HloInstruction* op) { operands_.at(i) = op; }

  // parameter(N)
  int64_t parameter_number() const { return parameter_number_; }
  void set_parameter_number(int64_t n) { parameter_number_ = n; }
  // constant(...)
  const Literal& literal() const { return literal_; }
  Literal& mutable_literal() { return literal_; }

  // Attributes in source order; typed or raw (see attributes.h).
  const std::vector<Attribute>& attributes() const { return attrs_; }
  std::vector<Attribute>& mutable_attributes() { return attrs_; }
  const Attribute* FindAttr(std::string_view key) const;
  void SetAttr(std::string key, AttrValue value);  // replaces or appends

  // Typed accessors; nullptr / nullopt when the attribute is absent or of another form.
  const IntList* GetIntList(std::string_view key) const { return Get<IntList>(key); }
  std::optional<int64_t> GetInt(std::string_view key) const;
  std::optional<double> GetFloat(std::string_view key) const;
  std::optional<std::string> GetWord(std::string_view key) const;
  const WordList* GetWordList(std::string_view key) const { return Get<WordList>(key); }
  const SliceBounds* slice() const { return Get<SliceBounds>("slice"); }
  const PaddingConfig* padding() const { return Get<PaddingConfig>("padding"); }
  const Window* window() const { return Get<Window>("window"); }
  const ConvDims* conv_dims() const { return Get<ConvDims>("dim_labels"); }
  const ReplicaGroups* replica_groups() const { return Get<ReplicaGroups>("replica_groups"); }
  const PairList* source_target_pairs() const { return Get<PairList>("source_target_pairs"); }
  const std::string* RawAttr(std::string_view key) const;
  const IntList* dimensions() const { return GetIntList("dimensions"); }
  std::optional<int64_t> channel_id() const { return GetInt("channel_id"); }

  // Called computations by role; nullptr when absent.
  HloComputation* CalledComputation(std::string_view key) const;
  HloComputation* to_apply() const { return CalledComputation("to_apply"); }
  HloComputation* condition() const { return CalledComputation("condition"); }
  HloComputation* body() const { return CalledComputation("body"); }
  HloComputation* fused_computation() const { return CalledComputation("calls"); }
  std::vector<HloComputation*> branch_computations() const;
  std::vector<HloComputation*> called_computations() const;  // all, in attribute order

  template <typename T>
  const T* Get(std::string_view key) const {
    const Attribute* a = FindAttr(key);
    return a ? std::get_if<T>(&a->value) : nullptr;
  }

 private:
  std::string name_;
  Opcode opcode_;
  Shape shape_;
  int64_t id_ = -1;
  HloComputation* parent_ = nullptr;
  std::vector<HloInstruction*> operands_;
  int64_t parameter_number_ = -1;
  Literal literal_;
  std::vector<Attribute> attrs_;
};

class HloComputation {
 public:
  explicit HloComputation(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  bool is_entry() const { return is_entry_; }
  void set_entry(bool e) { is_entry_ = e; }

  // Instructions in order; the computation owns them.
  const std::vector<std::unique_ptr<HloInstruction>>& instructions() const { return instrs_; }
  HloInstruction* AddInstruction(std::unique_ptr<HloInstruction> instr);
  // Puts the instructions in `order`, a permutation of them (a schedule); false, changing
  // nothing, when it is not one.
  bool Reorder(const std::vector<HloInstruction*>& order);
  HloInstruction* root() const { return root_; }
  void set_root(HloInstruction* r) { root_ = r; }
  // Parameters sorted by parameter number.
  std::vector<HloInstruction*> parameters() const;
  HloInstruction* Find(std::string_view name) const;
  // Attributes after the closing brace (e.g. execution_thread="host"), verbatim.
  std::vector<Attribute>& attributes() { return attrs_; }
  const std::vector<Attribute>& attributes() const { return attrs_; }

 private:
  std::string name_;
  bool is_entry_ = false;
  std::vector<std::unique_ptr<HloInstruction>> instrs_;
  std::unordered_map<std::string, HloInstruction*> by_name_;  // first of each name
  HloInstruction* root_ = nullptr;
  std::vector<Attribute> attrs_;
};

class HloModule {
 public:
  HloModule() = default;
  HloModule(HloModule&&) = default;
  HloModule& operator=(HloModule&&) = default;

  std::string name;
  // Header attributes. The typed ones are also kept in `header` in source order.
  int64_t replica_count = 1;
  int64_t num_partitions = 1;
  bool alias_passthrough_params = false;
  std::string entry_computation_layout;  // verbatim, without the outer braces
  std::string input_output_alias;        // verbatim, without the outer braces
  std::vector<Attribute> header;
  StackFrameIndex stack_frames;  // source locations metadata refers to; empty if none
  // Set by the SPMD partitioner, as XLA's HloModule keeps them: the global layout of the
  // entry's result and of each parameter (by number) of the program it partitioned. Not
  // printed; the partitioned entry's root and parameters also say it in `sharding=`.
  std::optional<HloSharding> spmd_output_sharding;
  std::vector<HloSharding> spmd_parameters_shardings;
  // Set by the batch-sharding pass on a single-replica module that states no sharding: the
  // batch it split over the devices (0: none), or why it left the module whole.
  int64_t inferred_batch = 0;
  std::string batch_not_split_reason;

  const std::vector<std::unique_ptr<HloComputation>>& computations() const { return comps_; }
  HloComputation* AddComputation(std::unique_ptr<HloComputation> c);
  HloComputation* entry() const { return entry_; }
  void set_entry(HloComputation* c) { entry_ = c; }
  HloComputation* Find(std::string_view name) const;
  size_t instruction_count() const;

 private:
  std::vector<std::unique_ptr<HloComputation>> comps_;
  HloComputation* entry_ = nullptr;
};

}  // namespace tpusim::hlo
