// Internal: the recursive-descent HLO text parser. Every method returns false after
// recording the first error; nothing throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/status.h"

namespace tpusim::hlo::internal {

class Parser {
 public:
  Parser(std::string_view text, std::string_view filename) : text_(text), file_(filename) {}
  Result<HloModule> Run();

 private:
  // Lexing primitives (parse_lex.cc).
  bool SkipSpace();  // whitespace and comments
  char Peek();       // after SkipSpace; '\0' at the end
  char PeekRaw() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool TryEat(char c);
  bool Expect(char c, std::string_view context);
  bool TryKeyword(std::string_view word);  // whole identifier
  std::string_view PeekIdent();            // identifier at pos_ (after SkipSpace), not consumed
  bool ParseIdent(std::string* out, std::string_view what);
  bool ParseName(std::string* out, std::string_view what);  // %name or name
  bool ParseInt(int64_t* out, std::string_view what);
  bool ParseNumberToken(std::string_view* tok);
  bool ParseDouble(double* out, std::string_view what);
  bool ParseIntList(std::vector<int64_t>* out, char open, char close, std::string_view what);
  bool CaptureRaw(std::string* out);
  bool CaptureBalanced(size_t start);
  bool ParseQuoted(std::string* out);
  bool Fail(size_t pos, const std::string& msg);
  bool FailHere(const std::string& msg);
  bool Enter();  // nesting guard
  void Leave() { --depth_; }
  void LineCol(size_t pos, int* line, int* col) const;
  std::string Where(size_t pos) const;  // "line L, column C"

  // Shapes and literals (parse_shape.cc).
  bool LooksLikeShape();
  bool ParseShape(Shape* out);
  bool ParseLayout(Layout* out);
  bool ParseLiteral(const Shape& shape, Literal* out);
  bool ParseLiteralItems(const Shape& shape, Literal* out);
  bool ParseLiteralScalar(const Shape& shape, Literal* out);

  // Module structure (parse_module.cc).
  bool ParseModule();
  bool ParseHeaderAttr();
  bool ParseComputation();
  bool ParseInstruction(HloComputation* comp);
  HloInstruction* ParseOpcodeAndOperands(HloComputation* comp, std::string name, Shape shape,
                                         size_t name_pos);
  bool ParseOperands(HloComputation* comp, HloInstruction* instr);
  bool RejectOpcode(Opcode op, size_t pos);
  bool ResolveComputations();
  std::string UniqueName(std::string_view base);
  bool CheckCustomCall(const HloInstruction& instr, size_t pos);
  HloInstruction* TupleElement(HloComputation* comp, HloInstruction* tuple, size_t pos);

  // Stack-frame tables between the header and the computations (parse_stack_frames.cc).
  bool AtStackFrameTable();
  bool ParseStackFrameTable();
  bool CheckStackFrames(size_t pos);

  // Attributes (parse_attrs.cc).
  bool ParseAttribute(HloInstruction* instr);
  bool ParseAttrValue(std::string_view key, size_t key_pos, AttrValue* out);
  bool ParseSlice(SliceBounds* out);
  bool ParsePadding(PaddingConfig* out);
  bool ParseWindow(Window* out);
  bool ParseDimLabels(ConvDims* out);
  bool ParseReplicaGroups(ReplicaGroups* out);
  bool ParseMeshReplicaGroups(ReplicaGroups* out);  // parse_mesh_groups.cc
  bool ParsePairs(PairList* out);
  bool ParseComputationRefs(ComputationRefs* out);
  bool ParseWordList(WordList* out);
  bool ParseDimToken(std::string_view* tok);

  struct PendingRef {
    HloInstruction* instr;
    std::string key;
    size_t pos;
  };

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  int depth_ = 0;
  Status error_;
  HloModule module_;
  int64_t next_id_ = 0;
  std::unordered_map<std::string, HloInstruction*> names_;  // current computation
  std::unordered_map<std::string, size_t> all_names_;       // whole module, for uniqueness
  std::vector<PendingRef> pending_;
  std::unordered_map<const HloComputation*, size_t> comp_pos_;
};

}  // namespace tpusim::hlo::internal
