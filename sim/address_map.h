// Global DMA addresses: which core, which memory, which byte. Every core's HBM and VMEM
// is reachable by DMA under one 64-bit address map; the router decodes it.
#pragma once

#include <cstdint>

namespace tpusim::sim {

enum class Space : uint8_t { kHbm = 0, kVmem = 1, kSmem = 2 };
inline constexpr int kNumSpaces = 3;
inline constexpr int kNumGlobalSpaces = 2;  // dma.g reaches HBM and VMEM, not SMEM

// Layout: bits 63..56 core, 55..48 space, 47..0 offset (256 TiB per space).
inline constexpr uint64_t kOffsetBits = 48;
inline constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;

inline uint64_t GlobalAddr(int core, Space s, uint64_t offset) {
  return (uint64_t(core) << 56) | (uint64_t(s) << kOffsetBits) | (offset & kOffsetMask);
}
inline int AddrCore(uint64_t a) { return static_cast<int>(a >> 56); }
inline Space AddrSpace(uint64_t a) { return static_cast<Space>((a >> kOffsetBits) & 0xff); }
inline uint64_t AddrOffset(uint64_t a) { return a & kOffsetMask; }

inline const char* SpaceName(Space s) {
  return s == Space::kHbm ? "HBM" : s == Space::kVmem ? "VMEM" : "SMEM";
}

}  // namespace tpusim::sim
