#include "pulse/program.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace pulse {
namespace {

constexpr char kMagic[4] = {'P', 'U', 'L', 'S'};

template <typename T>
void Put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));  // the build targets little-endian hosts
}

template <typename T>
T Get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

bool IsValidOperandKind(uint8_t k) { return k <= static_cast<uint8_t>(isa::OperandKind::kMem); }

// The first encoding version that has op.
uint16_t VersionOf(isa::Opcode op) { return op == isa::Opcode::kPrefetch ? 2 : 1; }

}  // namespace

std::vector<uint8_t> EncodeProgram(std::span<const isa::Instruction> insns) {
  std::vector<uint8_t> out;
  out.reserve(kProgramHeaderBytes + insns.size() * kInstructionBytes);
  uint16_t version = 1;
  for (const auto& in : insns) version = std::max(version, VersionOf(in.op));
  for (char c : kMagic) Put<uint8_t>(out, static_cast<uint8_t>(c));
  Put<uint16_t>(out, version);
  Put<uint16_t>(out, 0);
  Put<uint32_t>(out, static_cast<uint32_t>(insns.size()));
  Put<uint32_t>(out, 0);
  for (const auto& in : insns) {
    Put<uint8_t>(out, static_cast<uint8_t>(in.op));
    Put<uint8_t>(out, in.width);
    Put<uint8_t>(out, static_cast<uint8_t>(in.a.kind));
    Put<uint8_t>(out, in.a.reg);
    Put<uint8_t>(out, static_cast<uint8_t>(in.b.kind));
    Put<uint8_t>(out, in.b.reg);
    Put<uint16_t>(out, 0);
    Put<int64_t>(out, in.a.value);
    Put<int64_t>(out, in.b.value);
  }
  return out;
}

Result<std::vector<isa::Instruction>> DecodeProgram(std::span<const uint8_t> bytes) {
  if (bytes.size() < kProgramHeaderBytes)
    return Status::InvalidArgument("program: " + std::to_string(bytes.size()) +
                                   " bytes is shorter than the 16-byte header");
  if (std::memcmp(bytes.data(), kMagic, 4) != 0)
    return Status::InvalidArgument("program: bad magic (not a pulse program)");
  const uint16_t version = Get<uint16_t>(bytes.data() + 4);
  if (version < 1 || version > kProgramEncodingVersion)
    return Status::InvalidArgument("program: unsupported encoding version " + std::to_string(version) +
                                   " (this build reads versions 1 to " +
                                   std::to_string(kProgramEncodingVersion) + ")");
  if (Get<uint16_t>(bytes.data() + 6) != 0 || Get<uint32_t>(bytes.data() + 12) != 0)
    return Status::InvalidArgument("program: reserved header fields must be zero");
  const uint32_t count = Get<uint32_t>(bytes.data() + 8);
  const size_t body = bytes.size() - kProgramHeaderBytes;
  if (body % kInstructionBytes != 0 || body / kInstructionBytes != count)
    return Status::InvalidArgument("program: header says " + std::to_string(count) +
                                   " instructions but the body holds " + std::to_string(body) +
                                   " bytes (" + std::to_string(kInstructionBytes) +
                                   " per instruction)");
  std::vector<isa::Instruction> insns(count);
  uint16_t needed = 1;  // the version the instructions need: the header must say exactly that
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* p = bytes.data() + kProgramHeaderBytes + size_t{i} * kInstructionBytes;
    auto bad = [&](const std::string& what) {
      return Status::InvalidArgument("program: instruction " + std::to_string(i) + ": " + what);
    };
    if (!isa::IsValidOpcode(p[0])) return bad("unknown opcode " + std::to_string(p[0]));
    const auto op = static_cast<isa::Opcode>(p[0]);
    const uint16_t op_version = VersionOf(op);
    if (op_version > version)
      return bad(std::string(isa::OpcodeName(op)) + " needs encoding version " +
                 std::to_string(op_version) + ", the header says " + std::to_string(version));
    needed = std::max(needed, op_version);
    if (p[1] != 1 && p[1] != 2 && p[1] != 4 && p[1] != 8)
      return bad("width " + std::to_string(p[1]) + " is not 1, 2, 4 or 8");
    if (!IsValidOperandKind(p[2])) return bad("operand a has unknown kind " + std::to_string(p[2]));
    if (!IsValidOperandKind(p[4])) return bad("operand b has unknown kind " + std::to_string(p[4]));
    if (p[3] >= isa::kNumRegisters) return bad("operand a names register r" + std::to_string(p[3]));
    if (p[5] >= isa::kNumRegisters) return bad("operand b names register r" + std::to_string(p[5]));
    if (Get<uint16_t>(p + 6) != 0) return bad("reserved bytes must be zero");
    auto& in = insns[i];
    in.op = op;
    in.width = p[1];
    in.a = {static_cast<isa::OperandKind>(p[2]), p[3], Get<int64_t>(p + 8)};
    in.b = {static_cast<isa::OperandKind>(p[4]), p[5], Get<int64_t>(p + 16)};
  }
  // One encoding per program (its hash names it): the lowest version that
  // holds it, as EncodeProgram writes.
  if (version != needed)
    return Status::InvalidArgument("program: header says encoding version " + std::to_string(version) +
                                   " but no instruction needs more than version " + std::to_string(needed) +
                                   " (version 2 is for programs with PREFETCH)");
  return insns;
}

Result<std::shared_ptr<const VerifiedProgram>> VerifiedProgram::Create(
    std::vector<isa::Instruction> insns, const VerifierOptions& options) {
  auto info = VerifyProgram(insns, options);
  if (!info.ok()) return info.status();
  auto p = std::shared_ptr<VerifiedProgram>(new VerifiedProgram());
  p->info_ = *info;
  p->encoded_ = EncodeProgram(insns);
  p->hash_ = XXH64(p->encoded_.data(), p->encoded_.size(), 0);
  p->insns_ = std::move(insns);
  return std::shared_ptr<const VerifiedProgram>(std::move(p));
}

Result<std::shared_ptr<const VerifiedProgram>> VerifiedProgram::FromBytes(
    std::span<const uint8_t> bytes, const VerifierOptions& options) {
  auto insns = DecodeProgram(bytes);
  if (!insns.ok()) return insns.status();
  return Create(std::move(*insns), options);
}

}  // namespace pulse
