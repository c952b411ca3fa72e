// Shardy's mesh form of replica groups in the HLO parser: replica_groups=mesh['x'=8] {'x'}.
#include "compiler/hlo/parse/parser_impl.h"
#include "compiler/hlo/sharding.h"

namespace tpusim::hlo::internal {

bool Parser::ParseMeshReplicaGroups(ReplicaGroups* out) {
  size_t start = (SkipSpace(), pos_);
  if (!TryKeyword("mesh")) return FailHere("expected 'mesh'");
  if (PeekRaw() != '[') return FailHere("expected '[' after mesh");
  if (!CaptureBalanced(pos_)) return false;
  size_t after_axes = pos_;
  // ", device_ids=(...)" belongs to the mesh; any other comma ends the attribute.
  if (TryEat(',')) {
    if (PeekIdent() != "device_ids") {
      pos_ = after_axes;
      return FailHere("expected the grouped axes {...} after the mesh");
    }
    pos_ += std::string_view("device_ids").size();
    if (!Expect('=', "after device_ids") || (SkipSpace(), !CaptureBalanced(pos_))) return false;
  }
  if (Peek() != '{') return FailHere("expected the grouped axes {...} after the mesh");
  if (!CaptureBalanced(pos_)) return false;
  out->mesh = std::string(text_.substr(start, pos_ - start));
  auto groups = ExpandMeshReplicaGroups(out->mesh);
  if (!groups.ok()) return Fail(start, groups.status().message());
  out->groups = std::move(groups.value());
  return true;
}

}  // namespace tpusim::hlo::internal
