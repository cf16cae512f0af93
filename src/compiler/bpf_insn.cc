#include "compiler/bpf_insn.h"

#include <cstring>

#include <fmt/format.h>

namespace pulse::compiler {
namespace {

const char* SizeName(uint8_t size) {
  switch (size) {
    case kBpfB: return "u8";
    case kBpfH: return "u16";
    case kBpfW: return "u32";
    default: return "u64";
  }
}

const char* AluSymbol(uint8_t op) {
  switch (op) {
    case kBpfAdd: return "+=";
    case kBpfSub: return "-=";
    case kBpfMul: return "*=";
    case kBpfDiv: return "/=";
    case kBpfOr: return "|=";
    case kBpfAnd: return "&=";
    case kBpfLsh: return "<<=";
    case kBpfRsh: return ">>=";
    case kBpfMod: return "%=";
    case kBpfXor: return "^=";
    case kBpfMov: return "=";
    case kBpfArsh: return "s>>=";
    default: return "?=";
  }
}

const char* JmpSymbol(uint8_t op) {
  switch (op) {
    case kBpfJeq: return "==";
    case kBpfJgt: return ">";
    case kBpfJge: return ">=";
    case kBpfJset: return "&";
    case kBpfJne: return "!=";
    case kBpfJsgt: return "s>";
    case kBpfJsge: return "s>=";
    case kBpfJlt: return "<";
    case kBpfJle: return "<=";
    case kBpfJslt: return "s<";
    case kBpfJsle: return "s<=";
    default: return "?";
  }
}

std::string MemRef(const BpfInsn& in, int base) {
  if (in.off >= 0) return fmt::format("*({} *)(r{} + {})", SizeName(in.size()), base, in.off);
  return fmt::format("*({} *)(r{} - {})", SizeName(in.size()), base, -int{in.off});
}

}  // namespace

int BpfSizeBytes(uint8_t size) {
  switch (size) {
    case kBpfB: return 1;
    case kBpfH: return 2;
    case kBpfW: return 4;
    default: return 8;
  }
}

bool DecodeBpf(std::span<const uint8_t> bytes, std::vector<BpfInsn>* out, std::string* error) {
  if (bytes.size() % 8 != 0) {
    *error = fmt::format("code size {} is not a multiple of 8 bytes", bytes.size());
    return false;
  }
  const size_t n = bytes.size() / 8;
  out->assign(n, BpfInsn{});
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = bytes.data() + 8 * i;
    BpfInsn& in = (*out)[i];
    in.code = p[0];
    in.dst = p[1] & 0x0f;
    in.src = (p[1] >> 4) & 0x0f;
    std::memcpy(&in.off, p + 2, 2);
    std::memcpy(&in.imm, p + 4, 4);
    in.imm64 = in.imm;
    if (in.is_ld_imm64()) {
      if (i + 1 >= n) {
        *error = fmt::format("instruction {}: ld_imm64 is missing its second slot", i);
        return false;
      }
      int32_t hi;
      std::memcpy(&hi, bytes.data() + 8 * (i + 1) + 4, 4);
      in.imm64 = static_cast<int64_t>((static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32) |
                                      static_cast<uint32_t>(in.imm));
      in.slots = 2;
      (*out)[i + 1].slots = 0;
      ++i;
    }
  }
  return true;
}

std::string BpfToString(const BpfInsn& in) {
  const char rp = in.cls() == kBpfAlu || in.cls() == kBpfJmp32 ? 'w' : 'r';
  switch (in.cls()) {
    case kBpfLd:
      if (in.is_ld_imm64())
        return fmt::format("r{} = {:#x} ll{}", in.dst, static_cast<uint64_t>(in.imm64),
                           in.src ? fmt::format(" (pseudo {})", in.src) : "");
      return fmt::format("legacy packet load (code {:#04x})", in.code);
    case kBpfLdx:
      if (in.mode() != kBpfMem) return fmt::format("load with mode {:#04x}", in.mode());
      return fmt::format("r{} = {}", in.dst, MemRef(in, in.src));
    case kBpfSt:
      return fmt::format("{} = {}", MemRef(in, in.dst), in.imm);
    case kBpfStx:
      if (in.mode() == kBpfAtomic) return fmt::format("atomic op on {}", MemRef(in, in.dst));
      return fmt::format("{} = r{}", MemRef(in, in.dst), in.src);
    case kBpfAlu:
    case kBpfAlu64: {
      if (in.op() == kBpfNeg) return fmt::format("{}{} = -{}{}", rp, in.dst, rp, in.dst);
      if (in.op() == kBpfEnd)
        return fmt::format("r{} = {}{} r{}", in.dst, in.src_is_reg() ? "be" : "le", in.imm, in.dst);
      const std::string src =
          in.src_is_reg() ? fmt::format("{}{}", rp, in.src) : fmt::format("{}", in.imm);
      return fmt::format("{}{} {} {}", rp, in.dst, AluSymbol(in.op()), src);
    }
    case kBpfJmp:
    case kBpfJmp32: {
      if (in.op() == kBpfExit) return "exit";
      if (in.op() == kBpfCall) return fmt::format("call {}", in.imm);
      const std::string off = in.off >= 0 ? fmt::format("+{}", in.off) : fmt::format("{}", in.off);
      if (in.op() == kBpfJa) return fmt::format("goto {}", off);
      const std::string src =
          in.src_is_reg() ? fmt::format("{}{}", rp, in.src) : fmt::format("{}", in.imm);
      return fmt::format("if {}{} {} {} goto {}", rp, in.dst, JmpSymbol(in.op()), src, off);
    }
  }
  return fmt::format("unknown instruction (code {:#04x})", in.code);
}

}  // namespace pulse::compiler
