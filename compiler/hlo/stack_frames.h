// The stack-frame tables newer XLA prints between the module header and the computations
// (FileNames, FunctionNames, FileLocations, StackFrames). An instruction's
// metadata={... stack_frame_id=N} names the innermost frame of the Python stack that made it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::hlo {

struct FileLocation {  // 1 {file_name_id=1 function_name_id=1 line=554 ... end_column=8}
  int64_t id = 0, file_name_id = 0, function_name_id = 0;
  int64_t line = 0, end_line = 0, column = 0, end_column = 0;
  bool operator==(const FileLocation&) const = default;
};

// parent_frame_id as printed: one more than the caller's frame id, 1 for none (XLA prints
// its 0-based "no parent" as 1; frame 1 of every dump reads `parent_frame_id=1`).
struct StackFrame {  // 5 {file_location_id=4 parent_frame_id=4}
  int64_t id = 0, file_location_id = 0, parent_frame_id = 0;
  bool operator==(const StackFrame&) const = default;
};

struct NamedId {  // 1 "gen.py"
  int64_t id = 0;
  std::string name;
  bool operator==(const NamedId&) const = default;
};

struct StackFrameIndex {
  std::vector<NamedId> file_names, function_names;
  std::vector<FileLocation> file_locations;
  std::vector<StackFrame> stack_frames;
  bool empty() const { return stack_frames.empty() && file_locations.empty(); }
  bool operator==(const StackFrameIndex&) const = default;
};

// One Python frame: "gen.py:536 run.<locals>.<lambda>".
struct SourceFrame {
  std::string file, function;
  int64_t line = 0;
};

// The frames of stack_frame_id `id`, innermost first; empty for an unknown id. Bounded by
// the table's size, so a cycle in a hand-written table ends.
std::vector<SourceFrame> ResolveStackFrame(const StackFrameIndex& index, int64_t id);

// The tables as XLA prints them (a blank line after each), or "" when empty.
std::string PrintStackFrames(const StackFrameIndex& index);

}  // namespace tpusim::hlo
