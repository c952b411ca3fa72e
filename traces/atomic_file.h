// Atomic, streaming file output: data goes to PATH.tmp through a buffer; Commit() flushes,
// fsyncs and renames it over PATH. On any error, or if Commit() is never reached, the tmp
// file is removed, so PATH is either the old file or the complete new one.
#pragma once

#include <string>
#include <string_view>

namespace tpusim::traces {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  void Write(std::string_view s);
  AtomicFile& operator<<(std::string_view s) {
    Write(s);
    return *this;
  }
  // Returns false and sets error() when any step failed; the tmp file is then removed.
  bool Commit();

 private:
  void Flush();
  void Fail(const std::string& what);

  std::string path_, tmp_;
  std::string buf_;
  std::string error_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `content` to `path` atomically. Returns "" on success, else the error.
std::string WriteFileAtomic(const std::string& path, std::string_view content);

}  // namespace tpusim::traces
