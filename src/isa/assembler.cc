// The assembler: pulse assembly text -> instructions.  The syntax is
// specified in include/pulse/assembler.h.
//
// One pass over the lines parses every instruction and defines labels and
// constants as it meets them.  Jumps name labels that are usually defined
// further down (a verified program only jumps forward), so each jump records
// its label and a second pass patches the target indices in.  Constants, by
// contrast, must be defined before use: they may appear inside offsets, and
// resolving them late would mean keeping unparsed operands around.

#include <charconv>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "pulse/assembler.h"

namespace pulse {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Operand;
using isa::OperandKind;

// ---------------------------------------------------------------------------
// Characters and words

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// Length of the identifier at the start of s (0 if there is none).
size_t IdentifierLength(std::string_view s) {
  if (s.empty() || !IsIdentStart(s[0])) return 0;
  size_t n = 1;
  while (n < s.size() && IsIdentChar(s[n])) ++n;
  return n;
}

bool IsIdentifier(std::string_view s) { return !s.empty() && IdentifierLength(s) == s.size(); }

// "r7" / "R7" -> 7.  Returns nullopt if s is not register-shaped at all, so
// that "r16" (register-shaped, out of range) gets its own error instead of
// being taken for a constant name.  Huge numbers saturate.
std::optional<uint64_t> RegisterNumber(std::string_view s) {
  if (s.size() < 2 || (s[0] != 'r' && s[0] != 'R')) return std::nullopt;
  uint64_t n = 0;
  for (char c : s.substr(1)) {
    if (!IsDigit(c)) return std::nullopt;
    n = n > 1000 ? n : n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

Result<int> ParseRegister(std::string_view s) {
  const std::optional<uint64_t> n = RegisterNumber(s);
  if (!n) return Status::InvalidArgument("expected a register r0..r" +
                                         std::to_string(isa::kNumRegisters - 1) + ", got '" +
                                         std::string(s) + "'");
  if (*n >= static_cast<uint64_t>(isa::kNumRegisters))
    return Status::InvalidArgument("register " + std::string(s) + " does not exist (r0..r" +
                                   std::to_string(isa::kNumRegisters - 1) + ")");
  return static_cast<int>(*n);
}

// Words with a fixed meaning as operands; they cannot name constants.
bool IsOperandKeyword(std::string_view s) {
  return EqualsIgnoreCase(s, "cur_ptr") || EqualsIgnoreCase(s, "sp") ||
         EqualsIgnoreCase(s, "scratch_pad") || EqualsIgnoreCase(s, "data");
}

// ---------------------------------------------------------------------------
// Comments and lines

// Replaces every comment with spaces.  Newlines inside /* */ are kept so that
// line numbers in error messages match the source.
Result<std::string> StripComments(std::string_view text) {
  std::string out(text);
  int line = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (c == '\n') {
      ++line;
    } else if (c == ';' || c == '#' || (c == '/' && i + 1 < out.size() && out[i + 1] == '/')) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
      --i;  // let the loop see the newline
    } else if (c == '/' && i + 1 < out.size() && out[i + 1] == '*') {
      const int start_line = line;
      const size_t end = out.find("*/", i + 2);
      if (end == std::string::npos)
        return Status::InvalidArgument("line " + std::to_string(start_line) +
                                       ": unterminated /* comment");
      for (size_t j = i; j < end + 2; ++j) {
        if (out[j] == '\n') {
          ++line;
        } else {
          out[j] = ' ';
        }
      }
      i = end + 1;
    }
  }
  return out;
}

// Splits the operand text of an instruction or directive.  Operands are
// separated by whitespace and/or one comma; whitespace inside [...] belongs
// to the operand ("sp[r1 + 8]").
Result<std::vector<std::string_view>> SplitOperands(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size() && IsSpace(s[i])) ++i;
  };
  skip_space();
  while (i < s.size()) {
    const size_t start = i;
    while (i < s.size() && !IsSpace(s[i]) && s[i] != ',') {
      if (s[i] == '[') {
        const size_t close = s.find(']', i);
        if (close == std::string_view::npos)
          return Status::InvalidArgument("missing ']' in '" + std::string(Trim(s.substr(start))) +
                                         "'");
        i = close;
      }
      ++i;
    }
    if (i == start) return Status::InvalidArgument("expected an operand before ','");
    out.push_back(s.substr(start, i - start));
    skip_space();
    if (i < s.size() && s[i] == ',') {
      ++i;
      skip_space();
      if (i == s.size()) return Status::InvalidArgument("expected an operand after ','");
    }
  }
  return out;
}

std::string OperandCountText(size_t n) {
  return std::to_string(n) + (n == 1 ? " operand" : " operands");
}

// ---------------------------------------------------------------------------
// Numbers

enum class NumberRange {
  kImmediate,  // [-2^63, 2^64): a 64-bit pattern, so 0xffffffffffffffff works
  kOffset,     // int64 only: offsets and jump indices are signed
};

// Unsigned decimal or 0x-hex.  False if malformed; *overflow if it does not
// fit in 64 bits.
bool ParseMagnitude(std::string_view s, uint64_t* out, bool* overflow) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  if (ptr != s.data() + s.size()) return false;
  *overflow = ec == std::errc::result_out_of_range;
  return ec == std::errc() || *overflow;
}

// ---------------------------------------------------------------------------
// The assembler proper

struct Address {  // the inside of [...]
  bool has_reg = false;
  int reg = 0;
  int64_t offset = 0;
};

struct LabelUse {  // a jump waiting for its label
  size_t insn;
  std::string label;
  int line;
};

struct Definition {
  int64_t value;  // constants: the value; labels: the instruction index
  int line;
};

class Assembler {
 public:
  Result<std::vector<Instruction>> Run(std::string_view text);

 private:
  Status ParseLine(std::string_view line);
  Status DefineLabel(std::string_view name);
  Status ParseDirective(std::string_view text);
  Status ParseInstruction(std::string_view text);
  Status ParseOperands(Opcode op, const std::vector<std::string_view>& ops, Instruction* in);
  Result<int64_t> ParseJumpTarget(std::string_view tok);

  Result<Operand> ParseOperand(std::string_view tok) const;
  Result<Operand> ParseSource(std::string_view tok) const;
  Result<Operand> ParseDestination(Opcode op, std::string_view tok) const;
  Result<Operand> ParseBracketed(std::string_view base, std::string_view tok) const;
  Result<Address> ParseAddress(std::string_view inner) const;
  Result<int64_t> ParseTerm(std::string_view s, NumberRange range) const;

  int line_ = 0;
  std::vector<Instruction> insns_;
  std::map<std::string, Definition, std::less<>> labels_;
  std::map<std::string, Definition, std::less<>> constants_;
  std::vector<LabelUse> label_uses_;
};

Result<std::vector<Instruction>> Assembler::Run(std::string_view text) {
  Result<std::string> stripped = StripComments(text);
  if (!stripped.ok()) return stripped.status();
  std::string_view rest = *stripped;
  while (true) {
    ++line_;
    const size_t nl = rest.find('\n');
    Status s = ParseLine(rest.substr(0, nl));
    if (!s.ok()) return Status::InvalidArgument("line " + std::to_string(line_) + ": " + s.message());
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  // Second pass: every label is known now.
  for (const LabelUse& use : label_uses_) {
    auto it = labels_.find(use.label);
    if (it == labels_.end())
      return Status::InvalidArgument("line " + std::to_string(use.line) + ": undefined label '" +
                                     use.label + "'");
    insns_[use.insn].a = Operand::Imm(it->second.value);
  }
  return std::move(insns_);
}

// A line is: label definitions ("name:"), then an instruction or a directive,
// either of which may be absent.
Status Assembler::ParseLine(std::string_view line) {
  line = Trim(line);
  while (true) {
    const size_t n = IdentifierLength(line);
    if (n == 0) break;
    const std::string_view after = Trim(line.substr(n));
    if (after.empty() || after[0] != ':') break;
    PULSE_RETURN_IF_ERROR(DefineLabel(line.substr(0, n)));
    line = Trim(after.substr(1));
  }
  if (line.empty()) return Status::Ok();
  if (line[0] == '.') return ParseDirective(line);
  if (line[0] == ':') return Status::InvalidArgument("':' without a label name");
  return ParseInstruction(line);
}

Status Assembler::DefineLabel(std::string_view name) {
  auto [it, inserted] = labels_.try_emplace(
      std::string(name), Definition{static_cast<int64_t>(insns_.size()), line_});
  if (!inserted)
    return Status::InvalidArgument("duplicate label '" + std::string(name) +
                                   "' (first defined on line " +
                                   std::to_string(it->second.line) + ")");
  return Status::Ok();
}

// The only directive: ".equ NAME value".
Status Assembler::ParseDirective(std::string_view text) {
  size_t n = 1;
  while (n < text.size() && !IsSpace(text[n])) ++n;
  const std::string_view directive = text.substr(0, n);
  if (!EqualsIgnoreCase(directive, ".equ"))
    return Status::InvalidArgument("unknown directive '" + std::string(directive) +
                                   "' (only .equ exists)");
  Result<std::vector<std::string_view>> args = SplitOperands(text.substr(n));
  if (!args.ok()) return args.status();
  if (args->size() != 2)
    return Status::InvalidArgument(".equ takes a name and a value, got " +
                                   OperandCountText(args->size()));
  const std::string_view name = (*args)[0];
  if (!IsIdentifier(name))
    return Status::InvalidArgument("constant name '" + std::string(name) +
                                   "' is not an identifier");
  if (RegisterNumber(name) || IsOperandKeyword(name))
    return Status::InvalidArgument("'" + std::string(name) +
                                   "' is a register or operand keyword and cannot name a constant");
  Result<int64_t> value = ParseTerm((*args)[1], NumberRange::kImmediate);
  if (!value.ok()) return value.status();
  auto [it, inserted] = constants_.try_emplace(std::string(name), Definition{*value, line_});
  if (!inserted)
    return Status::InvalidArgument("duplicate constant '" + std::string(name) +
                                   "' (first defined on line " +
                                   std::to_string(it->second.line) + ")");
  return Status::Ok();
}

// "MNEMONIC[.width] operands..."
Status Assembler::ParseInstruction(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && !IsSpace(text[n])) ++n;
  const std::string_view word = text.substr(0, n);
  const size_t dot = word.find('.');
  const std::string_view name = word.substr(0, dot);
  const std::optional<Opcode> op = isa::OpcodeFromName(name);
  if (!op) return Status::InvalidArgument("unknown mnemonic '" + std::string(name) + "'");

  Instruction in;
  in.op = *op;
  if (dot != std::string_view::npos) {
    const std::string_view w = word.substr(dot + 1);
    if (w != "1" && w != "2" && w != "4" && w != "8")
      return Status::InvalidArgument("width ." + std::string(w) + " is not 1, 2, 4 or 8");
    in.width = static_cast<uint8_t>(w[0] - '0');
  }

  Result<std::vector<std::string_view>> ops = SplitOperands(text.substr(n));
  if (!ops.ok()) return ops.status();
  PULSE_RETURN_IF_ERROR(ParseOperands(*op, *ops, &in));
  insns_.push_back(in);
  return Status::Ok();
}

// Checks the operand count and shapes for op (isa.h's Instruction comment)
// and fills in->a / in->b.
Status Assembler::ParseOperands(Opcode op, const std::vector<std::string_view>& ops,
                                Instruction* in) {
  const std::string mnemonic(isa::OpcodeName(op));
  auto want = [&](size_t count) -> Status {
    if (ops.size() == count) return Status::Ok();
    if (count == 0)
      return Status::InvalidArgument(mnemonic + " takes no operands, got " +
                                     std::to_string(ops.size()));
    return Status::InvalidArgument(mnemonic + " takes " + OperandCountText(count) + ", got " +
                                   std::to_string(ops.size()));
  };

  if (op == Opcode::kLoad) {
    if (ops.empty() || ops.size() > 2)
      return Status::InvalidArgument("LOAD takes 1 or 2 operands (data [, window bytes]), got " +
                                     std::to_string(ops.size()));
    if (!EqualsIgnoreCase(ops[0], "data"))
      return Status::InvalidArgument("LOAD's first operand must be 'data', got '" +
                                     std::string(ops[0]) + "'");
    if (ops.size() == 2) {
      Result<int64_t> window = ParseTerm(ops[1], NumberRange::kImmediate);
      if (!window.ok()) return window.status();
      in->a = Operand::Imm(*window);
    }
    return Status::Ok();
  }
  if (isa::IsJump(op)) {
    PULSE_RETURN_IF_ERROR(want(1));
    Result<int64_t> target = ParseJumpTarget(ops[0]);
    if (!target.ok()) return target.status();
    in->a = Operand::Imm(*target);
    return Status::Ok();
  }
  if (isa::IsTerminal(op)) return want(0);
  if (op == Opcode::kPrefetch) {
    PULSE_RETURN_IF_ERROR(want(1));
    Result<Operand> a = ParseOperand(ops[0]);
    if (!a.ok()) return a.status();
    if (a->kind != OperandKind::kMem)
      return Status::InvalidArgument("PREFETCH's operand must be far memory [rN+off], got '" +
                                     std::string(ops[0]) + "'");
    in->a = *a;
    return Status::Ok();
  }
  if (isa::IsUnaryAlu(op)) {
    PULSE_RETURN_IF_ERROR(want(1));
    Result<Operand> a = ParseDestination(op, ops[0]);
    if (!a.ok()) return a.status();
    in->a = *a;
    return Status::Ok();
  }

  // Everything else takes two operands.
  PULSE_RETURN_IF_ERROR(want(2));
  Result<Operand> a = Status::Internal("unset");
  if (op == Opcode::kStore) {
    a = ParseOperand(ops[0]);
    if (a.ok() && a->kind != OperandKind::kMem)
      return Status::InvalidArgument("STORE destination must be far memory [rN+off], got '" +
                                     std::string(ops[0]) + "'");
  } else if (op == Opcode::kCompare) {
    a = ParseSource(ops[0]);
  } else if (op == Opcode::kAlloc) {
    Result<int> reg = ParseRegister(ops[0]);
    if (!reg.ok()) return Status::InvalidArgument("ALLOC destination: " + reg.status().message());
    a = Operand::Reg(*reg);
  } else {  // binary ALU, MOVE
    a = ParseDestination(op, ops[0]);
  }
  if (!a.ok()) return a.status();

  Result<Operand> b = ParseSource(ops[1]);
  if (!b.ok()) return b.status();
  if (op == Opcode::kAlloc && b->kind != OperandKind::kSp)
    return Status::InvalidArgument("ALLOC's region table must be sp[offset], got '" +
                                   std::string(ops[1]) + "'");
  in->a = *a;
  in->b = *b;
  return Status::Ok();
}

// A label (resolved in the second pass; returns a placeholder) or @index.
Result<int64_t> Assembler::ParseJumpTarget(std::string_view tok) {
  if (tok[0] == '@') {
    Result<int64_t> index = ParseTerm(tok.substr(1), NumberRange::kOffset);
    if (!index.ok())
      return Status::InvalidArgument("bad jump target '" + std::string(tok) +
                                     "': " + index.status().message());
    return index;
  }
  if (!IsIdentifier(tok))
    return Status::InvalidArgument("jump target must be a label or @index, got '" +
                                   std::string(tok) + "'");
  label_uses_.push_back({insns_.size(), std::string(tok), line_});
  return 0;
}

// Any operand: rN, immediate, constant, cur_ptr, sp[..], data[..], [rN+off].
// Whether the opcode accepts it is the caller's business.
Result<Operand> Assembler::ParseOperand(std::string_view tok) const {
  if (tok[0] == '[') return ParseBracketed("", tok);
  if (tok[0] == '@')
    return Status::InvalidArgument("'" + std::string(tok) +
                                   "' is a jump target; only jumps take one");
  const size_t n = IdentifierLength(tok);
  if (n == 0) {  // a number, possibly negative; "-NAME" also lands here
    Result<int64_t> v = ParseTerm(tok, NumberRange::kImmediate);
    if (!v.ok()) return v.status();
    return Operand::Imm(*v);
  }
  const std::string_view word = tok.substr(0, n);
  if (n < tok.size()) {
    if (tok[n] == '[') return ParseBracketed(word, tok);
    return Status::InvalidArgument("bad operand '" + std::string(tok) + "'");
  }
  if (EqualsIgnoreCase(word, "cur_ptr")) return Operand::CurPtr();
  if (RegisterNumber(word)) {
    Result<int> reg = ParseRegister(word);
    if (!reg.ok()) return reg.status();
    return Operand::Reg(*reg);
  }
  if (IsOperandKeyword(word))
    return Status::InvalidArgument("'" + std::string(word) + "' needs an offset: " +
                                   std::string(word) + "[off]");
  Result<int64_t> v = ParseTerm(word, NumberRange::kImmediate);
  if (!v.ok()) return v.status();
  return Operand::Imm(*v);
}

// Sources are every operand but far memory, which only STORE writes.
Result<Operand> Assembler::ParseSource(std::string_view tok) const {
  Result<Operand> o = ParseOperand(tok);
  if (o.ok() && o->kind == OperandKind::kMem)
    return Status::InvalidArgument("far memory operand '" + std::string(tok) +
                                   "' can only be a STORE destination or a PREFETCH address");
  return o;
}

// A destination is any source but an immediate.  Whether it is writable
// (data[] is not) is the verifier's call.
Result<Operand> Assembler::ParseDestination(Opcode op, std::string_view tok) const {
  Result<Operand> o = ParseSource(tok);
  if (o.ok() && o->kind == OperandKind::kImm)
    return Status::InvalidArgument(std::string(isa::OpcodeName(op)) +
                                   " destination cannot be an immediate ('" + std::string(tok) +
                                   "')");
  return o;
}

// base is "sp", "scratch_pad", "data" or "" (far memory); tok is the whole
// operand, ending in "]".
Result<Operand> Assembler::ParseBracketed(std::string_view base, std::string_view tok) const {
  const bool is_sp = EqualsIgnoreCase(base, "sp") || EqualsIgnoreCase(base, "scratch_pad");
  const bool is_data = EqualsIgnoreCase(base, "data");
  if (!base.empty() && !is_sp && !is_data)
    return Status::InvalidArgument("unknown memory operand '" + std::string(tok) +
                                   "' (expected sp[...], data[...] or [rN+off])");
  const std::string_view inner = tok.substr(base.size() + 1);
  const size_t close = inner.find(']');
  if (close + 1 != inner.size() || inner.substr(0, close).find('[') != std::string_view::npos)
    return Status::InvalidArgument("bad operand '" + std::string(tok) + "'");
  Result<Address> addr = ParseAddress(inner.substr(0, close));
  if (!addr.ok()) return addr.status();
  if (is_sp)
    return addr->has_reg ? Operand::SpIdx(addr->reg, addr->offset) : Operand::Sp(addr->offset);
  if (is_data)
    return addr->has_reg ? Operand::DataIdx(addr->reg, addr->offset)
                         : Operand::Data(addr->offset);
  if (!addr->has_reg)
    return Status::InvalidArgument("far memory operand '" + std::string(tok) +
                                   "' needs a base register: [rN+off]");
  return Operand::Mem(addr->reg, addr->offset);
}

// "off", "rN", "rN+off" or "rN-off"; whitespace allowed around the sign.
Result<Address> Assembler::ParseAddress(std::string_view inner) const {
  inner = Trim(inner);
  if (inner.empty()) return Status::InvalidArgument("empty brackets: expected [rN+off] or [off]");
  Address addr;
  const size_t n = IdentifierLength(inner);
  if (n == 0 || !RegisterNumber(inner.substr(0, n))) {
    Result<int64_t> off = ParseTerm(inner, NumberRange::kOffset);
    if (!off.ok()) return off.status();
    addr.offset = *off;
    return addr;
  }
  Result<int> reg = ParseRegister(inner.substr(0, n));
  if (!reg.ok()) return reg.status();
  addr.has_reg = true;
  addr.reg = *reg;
  const std::string_view rest = Trim(inner.substr(n));
  if (rest.empty()) return addr;
  if (rest[0] != '+' && rest[0] != '-')
    return Status::InvalidArgument("bad address '" + std::string(inner) +
                                   "': expected rN+off or rN-off");
  // "-off" is parsed with its sign so that the most negative offset works.
  Result<int64_t> off = ParseTerm(rest[0] == '+' ? rest.substr(1) : rest, NumberRange::kOffset);
  if (!off.ok()) return off.status();
  addr.offset = *off;
  return addr;
}

// A number or a constant, optionally negated.
Result<int64_t> Assembler::ParseTerm(std::string_view s, NumberRange range) const {
  const std::string original(Trim(s));
  s = Trim(s);
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) s = Trim(s.substr(1));
  if (s.empty()) return Status::InvalidArgument("expected a number or constant, got '" + original + "'");

  if (IsIdentStart(s[0])) {
    if (!IsIdentifier(s))
      return Status::InvalidArgument("bad operand '" + original + "'");
    if (RegisterNumber(s) || IsOperandKeyword(s))
      return Status::InvalidArgument("expected a number or constant, got '" + original + "'");
    auto it = constants_.find(s);
    if (it == constants_.end())
      return Status::InvalidArgument("undefined constant '" + std::string(s) + "'");
    const int64_t v = it->second.value;
    if (!negative) return v;
    if (v == std::numeric_limits<int64_t>::min())
      return Status::InvalidArgument("'" + original + "' is out of range");
    return -v;
  }

  uint64_t mag = 0;
  bool overflow = false;
  if (!ParseMagnitude(s, &mag, &overflow))
    return Status::InvalidArgument("bad number '" + original + "'");
  constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;  // |INT64_MIN|
  if (overflow || (negative && mag > kMinMagnitude) ||
      (!negative && range == NumberRange::kOffset && mag >= kMinMagnitude))
    return Status::InvalidArgument(
        "'" + original + "' is out of range (" +
        (range == NumberRange::kOffset ? "offsets are signed 64-bit" : "immediates are 64-bit") +
        ")");
  // Conversions to int64 are modular in C++20: 2^64-1 becomes -1 and
  // 0 - 2^63 becomes INT64_MIN.
  return negative ? static_cast<int64_t>(uint64_t{0} - mag) : static_cast<int64_t>(mag);
}

}  // namespace

Result<std::vector<isa::Instruction>> Assemble(std::string_view text) {
  return Assembler().Run(text);
}

}  // namespace pulse
