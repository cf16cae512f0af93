#include "compiler/elf_reader.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#ifndef EM_BPF
#define EM_BPF 247
#endif

namespace pulse::compiler {
namespace {

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

std::string SectionName(Elf* elf, size_t shstrndx, const GElf_Shdr& shdr) {
  const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
  return name ? name : "";
}

}  // namespace

const ElfSection* ElfObject::Find(std::string_view name) const {
  for (const auto& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<const ElfSymbol*> ElfObject::FunctionsIn(int section) const {
  std::vector<const ElfSymbol*> out;
  for (const auto& s : symbols)
    if (s.section == section && s.type == STT_FUNC) out.push_back(&s);
  std::sort(out.begin(), out.end(),
            [](const ElfSymbol* a, const ElfSymbol* b) { return a->value < b->value; });
  return out;
}

Result<FunctionCode> FunctionCodeIn(const ElfObject& obj, const ElfSection& section) {
  // clang writes whole instructions; trailing bytes mean a damaged object,
  // which is refused rather than read around.
  if (section.data.size() % 8 != 0)
    return Status::InvalidArgument(fmt::format("section {}: {} bytes, not a whole number of 8-byte BPF instructions",
                                               section.name, section.data.size()));
  FunctionCode code;
  uint64_t size = section.data.size();
  if (auto funcs = obj.FunctionsIn(section.index); !funcs.empty()) {
    code.symbol = funcs.front()->name;
    code.start = funcs.front()->value;
    if (funcs.front()->size) size = funcs.front()->size;
  }
  if (code.start > section.data.size() || size > section.data.size() - code.start)
    return Status::InvalidArgument(
        fmt::format("section {}: symbol {} lies outside the section", section.name, code.symbol));
  code.bytes = std::span(section.data).subspan(code.start, size);
  return code;
}

Result<ElfObject> ReadElfObject(std::span<const uint8_t> bytes) {
  if (elf_version(EV_CURRENT) == EV_NONE)
    return Status::Internal(fmt::format("libelf: {}", elf_errmsg(-1)));
  // libelf wants a mutable buffer; it does not write to it in ELF_C_READ mode.
  std::vector<char> buffer(bytes.begin(), bytes.end());
  std::unique_ptr<Elf, ElfCloser> elf(elf_memory(buffer.data(), buffer.size()));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF)
    return Status::InvalidArgument("object file: not an ELF file");
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf.get(), &ehdr))
    return Status::InvalidArgument(fmt::format("object file: bad ELF header: {}", elf_errmsg(-1)));
  if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != EM_BPF)
    return Status::InvalidArgument(fmt::format(
        "object file: not a 64-bit BPF object (machine {}); compile with -target bpf",
        ehdr.e_machine));
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf.get(), &shstrndx) != 0)
    return Status::InvalidArgument(fmt::format("object file: {}", elf_errmsg(-1)));

  ElfObject obj;
  struct RelSection {
    Elf_Scn* scn;
    GElf_Shdr shdr;
  };
  std::vector<RelSection> rels;
  Elf_Scn* symtab = nullptr;
  GElf_Shdr symtab_shdr{};

  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr))
      return Status::InvalidArgument(fmt::format("object file: {}", elf_errmsg(-1)));
    ElfSection sec;
    sec.index = static_cast<int>(elf_ndxscn(scn));
    sec.name = SectionName(elf.get(), shstrndx, shdr);
    sec.type = shdr.sh_type;
    sec.flags = shdr.sh_flags;
    if (shdr.sh_type != SHT_NOBITS) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (d && d->d_buf && d->d_size)
        sec.data.assign(static_cast<const uint8_t*>(d->d_buf),
                        static_cast<const uint8_t*>(d->d_buf) + d->d_size);
    }
    if (shdr.sh_type == SHT_REL || shdr.sh_type == SHT_RELA) rels.push_back({scn, shdr});
    if (shdr.sh_type == SHT_SYMTAB) {
      symtab = scn;
      symtab_shdr = shdr;
    }
    obj.sections.push_back(std::move(sec));
  }
  auto section_by_index = [&](int idx) -> ElfSection* {
    for (auto& s : obj.sections)
      if (s.index == idx) return &s;
    return nullptr;
  };

  if (symtab) {
    Elf_Data* d = elf_getdata(symtab, nullptr);
    const size_t count = symtab_shdr.sh_entsize ? symtab_shdr.sh_size / symtab_shdr.sh_entsize : 0;
    for (size_t i = 0; d && i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(d, static_cast<int>(i), &sym)) break;
      ElfSymbol s;
      const char* name = elf_strptr(elf.get(), symtab_shdr.sh_link, sym.st_name);
      s.name = name ? name : "";
      s.value = sym.st_value;
      s.size = sym.st_size;
      s.section = sym.st_shndx;
      s.type = GELF_ST_TYPE(sym.st_info);
      s.bind = GELF_ST_BIND(sym.st_info);
      if (s.type == STT_SECTION && s.name.empty()) {
        if (const ElfSection* sec = section_by_index(s.section)) s.name = sec->name;
      }
      obj.symbols.push_back(std::move(s));
    }
  }

  for (const auto& rel : rels) {
    ElfSection* target = section_by_index(static_cast<int>(rel.shdr.sh_info));
    if (!target) continue;
    Elf_Data* d = elf_getdata(rel.scn, nullptr);
    const size_t count = rel.shdr.sh_entsize ? rel.shdr.sh_size / rel.shdr.sh_entsize : 0;
    for (size_t i = 0; d && i < count; ++i) {
      ElfRelocation r;
      uint64_t info = 0;
      if (rel.shdr.sh_type == SHT_REL) {
        GElf_Rel e;
        if (!gelf_getrel(d, static_cast<int>(i), &e)) break;
        r.offset = e.r_offset;
        info = e.r_info;
      } else {
        GElf_Rela e;
        if (!gelf_getrela(d, static_cast<int>(i), &e)) break;
        r.offset = e.r_offset;
        info = e.r_info;
      }
      r.type = static_cast<uint32_t>(GELF_R_TYPE(info));
      const size_t sym = GELF_R_SYM(info);
      if (sym < obj.symbols.size()) {
        const ElfSymbol& s = obj.symbols[sym];
        r.symbol = s.name;
        if (s.section == SHN_UNDEF) {
          r.target = "undefined";
        } else if (const ElfSection* sec = section_by_index(s.section)) {
          r.target = sec->name;
        }
      }
      target->relocations.push_back(std::move(r));
    }
  }
  return obj;
}

}  // namespace pulse::compiler
