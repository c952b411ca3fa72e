#include "compiler/lowering/driver/emitter_table.h"

#include <array>
#include <cstddef>

namespace tpusim::lowering {
namespace {

using Table = std::array<EmitterRow, static_cast<size_t>(hlo::Opcode::kCount)>;

Table Build() {
  Table t;
  auto row = [&t](hlo::Opcode op) -> EmitterRow& { return t[static_cast<size_t>(op)]; };
#define NO_CODE(op) row(hlo::Opcode::op).kind = EmitterRow::Kind::kNoCode;
#define KERNEL(op, emitter) row(hlo::Opcode::op) = {EmitterRow::Kind::kKernel, &emitter, nullptr};
#define CORE_KERNELS(op, emitter) \
  row(hlo::Opcode::op) = {EmitterRow::Kind::kCoreKernels, nullptr, &emitter};
#define CONTROL(op, method) row(hlo::Opcode::op).kind = EmitterRow::Kind::kControl;
#include "compiler/lowering/driver/emitter_table.def"
  return t;
}

}  // namespace

const EmitterRow& EmitterFor(hlo::Opcode opcode) {
  static const Table table = Build();
  return table[static_cast<size_t>(opcode)];
}

bool DefinesNoBuffer(const hlo::HloInstruction& i) {
  return EmitterFor(i.opcode()).kind == EmitterRow::Kind::kNoCode;
}

}  // namespace tpusim::lowering
