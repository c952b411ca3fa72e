// A small assembly-text builder for the convolution kernel: numbered labels, deduplicated
// DMA descriptors, and immediates of any size (the ISA's are signed 32-bit).
#pragma once

#include <cstdint>
#include <map>
#include <sstream>
#include <string>

namespace tpusim::lowering {

struct DescShape {  // a .desc line's fields (docs/isa.md)
  int64_t rows = 1, row_bytes = 0, src_stride = 0, dst_stride = 0;
  int64_t planes = 1, src_plane_stride = 0, dst_plane_stride = 0;
  auto operator<=>(const DescShape&) const = default;
};

class ConvAsm {
 public:
  // Register `scratch` is clobbered by AddImm when the value needs more than 32 bits.
  explicit ConvAsm(int scratch) : scratch_(scratch) {}

  ConvAsm& operator<<(const std::string& instruction);  // one indented instruction
  void Label(const std::string& label) { body_ << label << ":\n"; }
  std::string NewLabel(const std::string& stem) { return stem + "_" + std::to_string(next_++); }
  // The name of a descriptor of this shape, defined on first use.
  std::string Desc(const DescShape& d);
  void Li(int rd, int64_t value);              // rd = value
  void AddImm(int rd, int ra, int64_t value);  // rd = ra + value (rd may be ra)
  void MulImm(int rd, int ra, int64_t value);  // rd = ra * value, value fits 32 bits
  std::string Text() const { return head_.str() + body_.str(); }

 private:
  int scratch_;
  int next_ = 0;
  std::map<DescShape, std::string> descs_;
  std::ostringstream head_, body_;
};

inline std::string R(int64_t n) { return "r" + std::to_string(n); }
inline std::string F(int64_t n) { return "f" + std::to_string(n); }

}  // namespace tpusim::lowering
