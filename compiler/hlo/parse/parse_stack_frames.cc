// The stack-frame tables of the HLO parser (FileNames, FunctionNames, FileLocations,
// StackFrames), their resolution into Python frames and their printing.
#include <set>

#include "compiler/hlo/parse/parser_impl.h"

namespace tpusim::hlo {
namespace internal {
namespace {

constexpr std::string_view kTables[] = {"FileNames", "FunctionNames", "FileLocations",
                                        "StackFrames"};

template <typename T>
const T* FindId(const std::vector<T>& v, int64_t id) {
  for (const T& e : v) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

}  // namespace

bool Parser::AtStackFrameTable() {
  std::string_view id = PeekIdent();
  bool known = false;
  for (std::string_view t : kTables) known |= id == t;
  if (!known) return false;
  size_t save = pos_;
  pos_ += id.size();
  bool table = Peek() >= '0' && Peek() <= '9';  // a computation's name is followed by ( or {
  pos_ = save;
  return table;
}

bool Parser::ParseStackFrameTable() {
  std::string table;
  size_t table_pos = (SkipSpace(), pos_);
  if (!ParseIdent(&table, "a stack-frame table name")) return false;
  StackFrameIndex& index = module_.stack_frames;
  // XLA prints each table once; a second one would merge ids the printer cannot keep apart.
  const bool seen = table == "FileNames"       ? !index.file_names.empty()
                    : table == "FunctionNames" ? !index.function_names.empty()
                    : table == "FileLocations" ? !index.file_locations.empty()
                                               : !index.stack_frames.empty();
  if (seen) return Fail(table_pos, "a second " + table + " table (each table comes once)");
  std::set<int64_t> ids;
  while (Peek() >= '0' && Peek() <= '9') {
    size_t entry_pos = pos_;
    int64_t id = 0;
    if (!ParseInt(&id, "as the entry's id")) return false;
    if (id < 1 || !ids.insert(id).second) {
      return Fail(entry_pos, table + ": entry ids must be positive and distinct");
    }
    if (table == "FileNames" || table == "FunctionNames") {
      NamedId n{id, ""};
      SkipSpace();
      if (!ParseQuoted(&n.name)) return false;
      (table == "FileNames" ? index.file_names : index.function_names).push_back(n);
      continue;
    }
    if (!Expect('{', "to start a " + table + " entry")) return false;
    FileLocation loc{id};
    StackFrame frame{id};
    while (!TryEat('}')) {
      size_t key_pos = (SkipSpace(), pos_);
      std::string key;
      int64_t v = 0;
      if (!ParseIdent(&key, "a field name in " + table) || !Expect('=', "after " + key) ||
          !ParseInt(&v, "for " + key)) {
        return false;
      }
      int64_t* field = nullptr;
      if (table == "FileLocations") {
        if (key == "file_name_id") field = &loc.file_name_id;
        if (key == "function_name_id") field = &loc.function_name_id;
        if (key == "line") field = &loc.line;
        if (key == "end_line") field = &loc.end_line;
        if (key == "column") field = &loc.column;
        if (key == "end_column") field = &loc.end_column;
      } else {
        if (key == "file_location_id") field = &frame.file_location_id;
        if (key == "parent_frame_id") field = &frame.parent_frame_id;
      }
      if (!field) return Fail(key_pos, "unknown field '" + key + "' in " + table);
      *field = v;
    }
    if (table == "FileLocations") {
      index.file_locations.push_back(loc);
    } else {
      index.stack_frames.push_back(frame);
    }
  }
  if (ids.empty()) return Fail(table_pos, table + " has no entries");
  return true;
}

// Every id a table entry names exists (called once the tables are read).
bool Parser::CheckStackFrames(size_t pos) {
  const StackFrameIndex& index = module_.stack_frames;
  for (const FileLocation& l : index.file_locations) {
    if (!FindId(index.file_names, l.file_name_id) ||
        !FindId(index.function_names, l.function_name_id)) {
      return Fail(pos, "FileLocations entry " + std::to_string(l.id) +
                           " names a file or function that FileNames/FunctionNames lack");
    }
  }
  for (const StackFrame& f : index.stack_frames) {
    if (!FindId(index.file_locations, f.file_location_id) ||
        (f.parent_frame_id > 1 && !FindId(index.stack_frames, f.parent_frame_id - 1))) {
      return Fail(pos, "StackFrames entry " + std::to_string(f.id) +
                           " names a location or parent frame that does not exist");
    }
  }
  return true;
}

}  // namespace internal

std::vector<SourceFrame> ResolveStackFrame(const StackFrameIndex& index, int64_t id) {
  std::vector<SourceFrame> out;
  for (size_t hops = 0; hops <= index.stack_frames.size(); ++hops) {
    const StackFrame* f = internal::FindId(index.stack_frames, id);
    if (!f) break;
    const FileLocation* loc = internal::FindId(index.file_locations, f->file_location_id);
    if (!loc) break;
    SourceFrame s;
    if (const NamedId* n = internal::FindId(index.file_names, loc->file_name_id)) s.file = n->name;
    if (const NamedId* n = internal::FindId(index.function_names, loc->function_name_id)) {
      s.function = n->name;
    }
    s.line = loc->line;
    out.push_back(std::move(s));
    if (f->parent_frame_id <= 1) break;
    id = f->parent_frame_id - 1;
  }
  return out;
}

namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string PrintStackFrames(const StackFrameIndex& index) {
  if (index.empty()) return "";
  std::string out;
  auto names = [&](const char* title, const std::vector<NamedId>& v) {
    if (v.empty()) return;
    out += std::string("\n") + title + "\n";
    for (const NamedId& n : v) out += std::to_string(n.id) + " " + Quote(n.name) + "\n";
  };
  names("FileNames", index.file_names);
  names("FunctionNames", index.function_names);
  if (!index.file_locations.empty()) {
    out += "\nFileLocations\n";
    for (const FileLocation& l : index.file_locations) {
      out += std::to_string(l.id) + " {file_name_id=" + std::to_string(l.file_name_id) +
             " function_name_id=" + std::to_string(l.function_name_id) +
             " line=" + std::to_string(l.line) + " end_line=" + std::to_string(l.end_line) +
             " column=" + std::to_string(l.column) + " end_column=" + std::to_string(l.end_column) +
             "}\n";
    }
  }
  if (!index.stack_frames.empty()) {
    out += "\nStackFrames\n";
    for (const StackFrame& f : index.stack_frames) {
      out += std::to_string(f.id) + " {file_location_id=" + std::to_string(f.file_location_id) +
             " parent_frame_id=" + std::to_string(f.parent_frame_id) + "}\n";
    }
  }
  return out;
}

}  // namespace tpusim::hlo
