#include "compiler/lowering/conv/conv_asm.h"

#include <limits>
#include <stdexcept>

namespace tpusim::lowering {
namespace {

bool FitsImm(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

}  // namespace

ConvAsm& ConvAsm::operator<<(const std::string& instruction) {
  body_ << "    " << instruction << "\n";
  return *this;
}

std::string ConvAsm::Desc(const DescShape& d) {
  auto it = descs_.find(d);
  if (it != descs_.end()) return it->second;
  std::string name = "d" + std::to_string(descs_.size());
  descs_.emplace(d, name);
  head_ << ".desc " << name << " rows=" << d.rows << " row_bytes=" << d.row_bytes
        << " src_stride=" << d.src_stride << " dst_stride=" << d.dst_stride;
  if (d.planes > 1)
    head_ << " planes=" << d.planes << " src_plane_stride=" << d.src_plane_stride
          << " dst_plane_stride=" << d.dst_plane_stride;
  head_ << "\n";
  return name;
}

void ConvAsm::Li(int rd, int64_t value) {
  if (FitsImm(value)) {
    *this << "li " + R(rd) + ", " + std::to_string(value);
    return;
  }
  if (value < 0 || value >= (int64_t{1} << 47))
    throw std::invalid_argument("convolution kernel: constant out of range");
  // value = (high << 16) + low with high < 2^31 and low < 2^16.
  *this << "li " + R(rd) + ", " + std::to_string(value >> 16)
        << "shli " + R(rd) + ", " + R(rd) + ", 16"
        << "addi " + R(rd) + ", " + R(rd) + ", " + std::to_string(value & 0xffff);
}

void ConvAsm::AddImm(int rd, int ra, int64_t value) {
  if (FitsImm(value)) {
    if (value != 0 || rd != ra)
      *this << "addi " + R(rd) + ", " + R(ra) + ", " + std::to_string(value);
    return;
  }
  if (ra == scratch_) throw std::logic_error("convolution kernel: AddImm reads its scratch");
  Li(scratch_, value);
  *this << "add " + R(rd) + ", " + R(ra) + ", " + R(scratch_);
}

void ConvAsm::MulImm(int rd, int ra, int64_t value) {
  if (!FitsImm(value)) throw std::invalid_argument("convolution kernel: stride above 2 GiB");
  *this << "muli " + R(rd) + ", " + R(ra) + ", " + std::to_string(value);
}

}  // namespace tpusim::lowering
