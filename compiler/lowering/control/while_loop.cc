// while with a static trip count (lowerer.h): a counted ISA loop whose state is the while's
// own buffers, one per tuple element; the body's result goes back into them after each trip
// (loop_state.h).
#include <algorithm>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/control/loop_state.h"
#include "compiler/lowering/driver/lowerer.h"

namespace tpusim::lowering {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

// The trip count of a while loop: XLA's known_trip_count, or the `i < N` pattern with i
// starting at a constant.
std::optional<int64_t> TripCount(const HloInstruction& w) {
  if (const std::string* cfg = w.RawAttr("backend_config")) {
    std::smatch m;
    static const std::regex kKnown("\"known_trip_count\"\\s*:\\s*\\{\\s*\"n\"\\s*:\\s*\"(\\d+)\"");
    if (std::regex_search(*cfg, m, kKnown)) return std::stoll(m[1]);
  }
  const HloInstruction* cmp = w.condition() ? w.condition()->root() : nullptr;
  if (!cmp || cmp->opcode() != Opcode::kCompare || cmp->GetWord("direction") != "LT") return {};
  const HloInstruction *iv = cmp->operand(0), *limit = cmp->operand(1);
  if (iv->opcode() != Opcode::kGetTupleElement || limit->opcode() != Opcode::kConstant ||
      limit->literal().ints.empty())
    return {};
  const int64_t index = iv->GetInt("index").value_or(-1);
  const HloInstruction* init = w.operand(0);
  if (init->opcode() != Opcode::kTuple || index < 0 ||
      index >= static_cast<int64_t>(init->operand_count()))
    return {};
  const HloInstruction* start = init->operand(static_cast<size_t>(index));
  if (start->opcode() != Opcode::kConstant || start->literal().ints.empty()) return {};
  return std::max<int64_t>(0, limit->literal().ints[0] - start->literal().ints[0]);
}

}  // namespace

// while with a static trip count: the state (the while's buffers) starts as a copy of the
// operand; a counted loop runs the body, whose parameter reads the state, then carries the
// body's result into the state (CarryState). The while's value is the state.
void Lowerer::LowerWhile(const HloInstruction& w, int64_t executions) {
  const std::optional<int64_t> trips = TripCount(w);
  if (!trips)
    throw std::invalid_argument("%" + w.name() +
                                " (while): the trip count is not static (no known_trip_count and "
                                "the condition is not `i < constant` from a constant start)");
  const HloComputation& body = *w.body();
  if (body.parameters().size() != 1)
    throw std::invalid_argument("%" + w.name() + " (while): the body " + body.name() + " takes " +
                                std::to_string(body.parameters().size()) + " parameters, not one");
  LoweredOp init = CopyOp(w.name() + ".init", executions);
  std::vector<ValueCopy> copies;
  for (int64_t k = 0; k < Leaves(w.shape()); ++k)
    copies.push_back(CopyOf(w.operand(0), k, Address(&w, k), ElementShape(w.shape(), k), init));
  EmitCopies(copies, w.name(), init);
  if (!copies.empty()) out_.ops.push_back(std::move(init));
  if (*trips == 0) return;
  Enter(body);
  buffers_.Bind(body.parameters()[0], &w);
  const int depth = loop_depth_++;
  const std::string label = "loop" + std::to_string(loops_++),
                    slot = std::to_string(assembly::kLoopCounterSmem + 4 * depth);
  Emit("    li r31, 0\n    sst r31, r0, " + slot + "\n" + label + ":\n");
  CarryState(w, executions * *trips);
  Emit("    sld r31, r0, " + slot + "\n    addi r31, r31, 1\n    sst r31, r0, " + slot +
       "\n    li r30, " + std::to_string(*trips) + "\n    blt r31, r30, " + label + "\n");
  --loop_depth_;
}

// One iteration: the body, then its result into the state. Root elements computed in place
// need nothing; the others are copied after the whole body, those read from another state
// element first into staging buffers, so no copy overwrites an element another still reads.
void Lowerer::CarryState(const HloInstruction& w, int64_t executions) {
  const HloComputation& body = *w.body();
  const std::vector<RootElement> roots = BodyRootElements(body);
  std::vector<bool> placed(roots.size(), false);
  for (size_t k = 0; k < roots.size(); ++k)
    placed[k] = roots[k].in_place && buffers_.Place(roots[k].value, roots[k].value_element,
                                                    Address(&w, static_cast<int64_t>(k)));
  LowerCalled(body, executions);
  std::set<uint64_t> state;
  for (int64_t k = 0; k < Leaves(w.shape()); ++k) state.insert(Address(&w, k));
  LoweredOp op = CopyOp(w.name() + ".carry", executions);
  std::vector<ValueCopy> staged, into_state;
  for (size_t k = 0; k < roots.size(); ++k) {
    const RootElement& r = roots[k];
    const int64_t e = static_cast<int64_t>(k);
    if (placed[k] || r.state_element == e || !r.value) continue;
    const hlo::Shape& shape = ElementShape(w.shape(), e);
    ValueCopy c = r.state_element >= 0
                      ? ValueCopy{Address(&w, e),
                                  ByteSize(shape),
                                  Address(&w, r.state_element),
                                  std::nullopt,
                                  {}}
                      : CopyOf(r.value, r.value_element, Address(&w, e), shape, op);
    if (!c.fill && c.src == c.dst) continue;
    if (!c.fill && state.count(c.src)) {  // another state element: through staging
      const uint64_t staging = buffers_.Staging(&w, e, c.bytes);
      staged.push_back(ValueCopy{staging, c.bytes, c.src, std::nullopt, {}});
      c.src = staging;
    }
    into_state.push_back(c);
  }
  if (into_state.empty()) return;
  EmitCopies(staged, w.name(), op);
  EmitCopies(into_state, w.name(), op);
  out_.ops.push_back(std::move(op));
}

}  // namespace tpusim::lowering
