#include "traces/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tpusim::traces {
namespace {
constexpr size_t kBufferBytes = 1 << 20;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) error_ = "cannot create " + tmp_ + ": " + std::strerror(errno);
  buf_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && error_.find("cannot create") != 0) ::unlink(tmp_.c_str());
}

void AtomicFile::Fail(const std::string& what) {
  if (error_.empty()) error_ = what + " " + tmp_ + ": " + std::strerror(errno);
}

void AtomicFile::Flush() {
  size_t done = 0;
  while (ok() && done < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      Fail("cannot write");
    else
      done += static_cast<size_t>(n);
  }
  buf_.clear();
}

void AtomicFile::Write(std::string_view s) {
  if (!ok()) return;
  buf_.append(s);
  if (buf_.size() >= kBufferBytes) Flush();
}

bool AtomicFile::Commit() {
  if (ok()) Flush();
  if (ok() && ::fsync(fd_) != 0) Fail("cannot fsync");
  if (fd_ >= 0 && ::close(fd_) != 0) Fail("cannot close");
  fd_ = -1;
  if (ok() && std::rename(tmp_.c_str(), path_.c_str()) != 0) Fail("cannot rename");
  if (!ok()) return false;
  committed_ = true;
  // Make the rename itself durable.
  const size_t slash = path_.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

std::string WriteFileAtomic(const std::string& path, std::string_view content) {
  AtomicFile f(path);
  f.Write(content);
  f.Commit();
  return f.error();
}

}  // namespace tpusim::traces
