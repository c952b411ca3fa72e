// Byte stores behind a core's memories. HBM is sparse: only touched 64 KiB pages cost
// host memory, and untouched bytes read as zero. Callers check bounds first.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace tpusim::sim {

class Memory {
 public:
  explicit Memory(uint64_t size) : size_(size) {}
  virtual ~Memory() = default;
  uint64_t size() const { return size_; }
  bool Contains(uint64_t addr, uint64_t n) const { return addr <= size_ && n <= size_ - addr; }
  virtual void Read(uint64_t addr, void* dst, uint64_t n) const = 0;
  virtual void Write(uint64_t addr, const void* src, uint64_t n) = 0;

 private:
  uint64_t size_;
};

// Dense storage, allocated on first write (timing-only runs never allocate).
class LinearMemory : public Memory {
 public:
  using Memory::Memory;
  void Read(uint64_t addr, void* dst, uint64_t n) const override;
  void Write(uint64_t addr, const void* src, uint64_t n) override;

 private:
  std::vector<uint8_t> bytes_;
};

class SparseMemory : public Memory {
 public:
  static constexpr uint64_t kPageBytes = 64 << 10;
  using Memory::Memory;
  void Read(uint64_t addr, void* dst, uint64_t n) const override;
  void Write(uint64_t addr, const void* src, uint64_t n) override;
  uint64_t resident_bytes() const { return pages_.size() * kPageBytes; }

 private:
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
};

}  // namespace tpusim::sim
