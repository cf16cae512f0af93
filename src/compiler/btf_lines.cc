#include "compiler/btf_lines.h"

#include <cstring>

namespace pulse::compiler {
namespace {

constexpr uint16_t kBtfMagic = 0xeB9F;

uint32_t U32(const std::vector<uint8_t>& d, size_t at) {
  uint32_t v = 0;
  if (at + 4 <= d.size()) std::memcpy(&v, d.data() + at, 4);
  return v;
}
uint16_t U16(const std::vector<uint8_t>& d, size_t at) {
  uint16_t v = 0;
  if (at + 2 <= d.size()) std::memcpy(&v, d.data() + at, 2);
  return v;
}

// .BTF header: magic u16, version u8, flags u8, hdr_len u32, type_off u32,
// type_len u32, str_off u32, str_len u32 (offsets from the header's end).
struct BtfStrings {
  const std::vector<uint8_t>* data = nullptr;
  size_t begin = 0, end = 0;
  std::string Get(uint32_t off) const {
    if (!data || begin + off >= end) return {};
    const char* p = reinterpret_cast<const char*>(data->data() + begin + off);
    return std::string(p, strnlen(p, end - begin - off));
  }
};

}  // namespace

LineTable LineTable::Read(const ElfObject& obj) {
  LineTable table;
  const ElfSection* btf = obj.Find(".BTF");
  const ElfSection* ext = obj.Find(".BTF.ext");
  if (!btf || !ext) return table;
  const auto& b = btf->data;
  if (b.size() < 24 || U16(b, 0) != kBtfMagic) return table;
  const uint32_t hdr_len = U32(b, 4);
  BtfStrings strings{&b, size_t{hdr_len} + U32(b, 16), size_t{hdr_len} + U32(b, 16) + U32(b, 20)};
  if (strings.end > b.size()) return table;

  // .BTF.ext header: magic u16, version u8, flags u8, hdr_len u32,
  // func_info_off u32, func_info_len u32, line_info_off u32, line_info_len u32.
  const auto& e = ext->data;
  if (e.size() < 32 || U16(e, 0) != kBtfMagic) return table;
  const uint32_t ext_hdr = U32(e, 4);
  size_t pos = size_t{ext_hdr} + U32(e, 16);
  const size_t end = pos + U32(e, 20);
  if (end > e.size() || pos + 4 > end) return table;
  const uint32_t rec_size = U32(e, pos);
  pos += 4;
  if (rec_size < 16) return table;
  // Per section: sec_name_off u32, num_info u32, then records of rec_size:
  // insn_off u32 (bytes), file_name_off u32, line_off u32, line_col u32.
  while (pos + 8 <= end) {
    const std::string sec = strings.Get(U32(e, pos));
    const uint32_t num = U32(e, pos + 4);
    pos += 8;
    auto& m = table.lines_[sec];
    for (uint32_t i = 0; i < num && pos + rec_size <= end; ++i, pos += rec_size) {
      SourceLine line;
      line.file = strings.Get(U32(e, pos + 4));
      line.text = strings.Get(U32(e, pos + 8));
      const uint32_t line_col = U32(e, pos + 12);
      line.line = static_cast<int>(line_col >> 10);
      line.column = static_cast<int>(line_col & 0x3ff);
      m[U32(e, pos)] = std::move(line);
    }
  }
  return table;
}

std::optional<SourceLine> LineTable::Lookup(const std::string& section, int slot) const {
  auto s = lines_.find(section);
  if (s == lines_.end() || slot < 0) return std::nullopt;
  auto it = s->second.upper_bound(static_cast<uint32_t>(slot) * 8);
  if (it == s->second.begin()) return std::nullopt;
  --it;
  if (it->second.line == 0) return std::nullopt;
  return it->second;
}

}  // namespace pulse::compiler
