#include "sim/memory.h"

#include <algorithm>
#include <cstring>

namespace tpusim::sim {

void LinearMemory::Read(uint64_t addr, void* dst, uint64_t n) const {
  if (bytes_.empty()) {
    std::memset(dst, 0, n);
    return;
  }
  std::memcpy(dst, bytes_.data() + addr, n);
}

void LinearMemory::Write(uint64_t addr, const void* src, uint64_t n) {
  if (bytes_.empty()) bytes_.assign(size(), 0);
  std::memcpy(bytes_.data() + addr, src, n);
}

void SparseMemory::Read(uint64_t addr, void* dst, uint64_t n) const {
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    uint64_t page = addr / kPageBytes, offset = addr % kPageBytes;
    uint64_t take = std::min(n, kPageBytes - offset);
    auto it = pages_.find(page);
    if (it == pages_.end())
      std::memset(out, 0, take);
    else
      std::memcpy(out, it->second.get() + offset, take);
    out += take, addr += take, n -= take;
  }
}

void SparseMemory::Write(uint64_t addr, const void* src, uint64_t n) {
  auto* in = static_cast<const uint8_t*>(src);
  while (n > 0) {
    uint64_t page = addr / kPageBytes, offset = addr % kPageBytes;
    uint64_t take = std::min(n, kPageBytes - offset);
    auto& p = pages_[page];
    // A new page is zeroed (unwritten memory reads as zeros) unless this write fills it.
    if (!p) p.reset(take == kPageBytes ? new uint8_t[kPageBytes] : new uint8_t[kPageBytes]());
    std::memcpy(p.get() + offset, in, take);
    in += take, addr += take, n -= take;
  }
}

}  // namespace tpusim::sim
