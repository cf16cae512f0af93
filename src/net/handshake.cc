#include "net/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

namespace pulse::net::handshake {
namespace {

void PutU16(std::vector<uint8_t>* out, uint16_t v) {
  out->push_back(static_cast<uint8_t>(v));
  out->push_back(static_cast<uint8_t>(v >> 8));
}
void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutU64(std::vector<uint8_t>* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint64_t GetLE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::vector<uint8_t> Header(Kind kind) {
  std::vector<uint8_t> out;
  PutU32(&out, kMagic);
  PutU16(&out, kVersion);
  PutU16(&out, static_cast<uint16_t>(kind));
  return out;
}

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kHello: return "hello";
    case Kind::kChallenge: return "challenge";
    case Kind::kProof: return "proof";
    case Kind::kVerdict: return "verdict";
  }
  return "?";
}

// Checks magic, version and kind of a message of `kind` (bytes.size() >= 8).
Status CheckHeader(Kind kind, std::span<const uint8_t> bytes) {
  const std::string what = std::string("handshake ") + KindName(kind);
  if (GetLE(bytes.data(), 4) != kMagic) return Status::InvalidArgument(what + ": bad magic (not a pulse peer)");
  const uint64_t version = GetLE(bytes.data() + 4, 2);
  if (version != kVersion) {
    return Status::InvalidArgument(what + ": version " + std::to_string(version) + ", expected " +
                                   std::to_string(kVersion));
  }
  if (GetLE(bytes.data() + 6, 2) != static_cast<uint16_t>(kind)) {
    return Status::InvalidArgument(what + ": wrong message kind " + std::to_string(GetLE(bytes.data() + 6, 2)));
  }
  return Status::Ok();
}

Status CheckSize(Kind kind, std::span<const uint8_t> bytes, size_t size) {
  if (bytes.size() != size) {
    return Status::InvalidArgument(std::string("handshake ") + KindName(kind) + ": " +
                                   std::to_string(bytes.size()) + " bytes, expected " + std::to_string(size));
  }
  return CheckHeader(kind, bytes);
}

void EncodeSigned(const Signed& s, std::vector<uint8_t>* out) {
  PutU64(out, s.endpoint_id);
  PutU32(out, static_cast<uint32_t>(s.address.size()));
  out->insert(out->end(), s.proof.begin(), s.proof.end());
  out->insert(out->end(), s.address.begin(), s.address.end());
}

// The body after `offset`: id, length, proof, address (exactly).
Result<Signed> DecodeSigned(Kind kind, std::span<const uint8_t> bytes, size_t offset) {
  const std::string what = std::string("handshake ") + KindName(kind);
  if (bytes.size() < offset + 12 + kProofSize) return Status::InvalidArgument(what + ": truncated");
  Signed s;
  s.endpoint_id = GetLE(bytes.data() + offset, 8);
  const uint64_t length = GetLE(bytes.data() + offset + 8, 4);
  if (length == 0 || length > kMaxWorkerAddress) {
    return Status::InvalidArgument(what + ": worker address length " + std::to_string(length) +
                                   " outside [1, " + std::to_string(kMaxWorkerAddress) + "]");
  }
  if (bytes.size() != offset + 12 + kProofSize + length) {
    return Status::InvalidArgument(what + ": length does not match the worker address length");
  }
  if (s.endpoint_id == 0) return Status::InvalidArgument(what + ": endpoint id 0");
  std::memcpy(s.proof.data(), bytes.data() + offset + 12, kProofSize);
  const uint8_t* addr = bytes.data() + offset + 12 + kProofSize;
  s.address.assign(addr, addr + length);
  return s;
}

}  // namespace

std::vector<uint8_t> EncodeHello(const Hello& h) {
  std::vector<uint8_t> out = Header(Kind::kHello);
  out.insert(out.end(), h.nonce.begin(), h.nonce.end());
  out.push_back(static_cast<uint8_t>(h.role));
  out.insert(out.end(), 3, 0);
  PutU32(&out, h.tenant);
  return out;
}

std::vector<uint8_t> EncodeChallenge(const Nonce& n) {
  std::vector<uint8_t> out = Header(Kind::kChallenge);
  out.insert(out.end(), n.begin(), n.end());
  return out;
}

std::vector<uint8_t> EncodeProof(const Signed& s) {
  std::vector<uint8_t> out = Header(Kind::kProof);
  EncodeSigned(s, &out);
  return out;
}

std::vector<uint8_t> EncodeVerdict(const Verdict& v) {
  std::vector<uint8_t> out = Header(Kind::kVerdict);
  PutU32(&out, v.code);
  if (v.code == 0) {
    EncodeSigned(v.accepted, &out);
  } else {
    const std::string text = v.text.substr(0, kMaxRefusalText);
    PutU32(&out, static_cast<uint32_t>(text.size()));
    out.insert(out.end(), text.begin(), text.end());
  }
  return out;
}

Result<Hello> DecodeHello(std::span<const uint8_t> bytes) {
  PULSE_RETURN_IF_ERROR(CheckSize(Kind::kHello, bytes, kHelloSize));
  Hello h;
  std::memcpy(h.nonce.data(), bytes.data() + kHeaderSize, kNonceSize);
  const uint8_t role = bytes[kHeaderSize + kNonceSize];
  if (role > static_cast<uint8_t>(Role::kTenant)) {
    return Status::InvalidArgument("handshake hello: unknown role " + std::to_string(role));
  }
  h.role = static_cast<Role>(role);
  for (size_t i = 1; i < 4; ++i) {
    if (bytes[kHeaderSize + kNonceSize + i] != 0) return Status::InvalidArgument("handshake hello: padding is not zero");
  }
  h.tenant = static_cast<uint32_t>(GetLE(bytes.data() + kHeaderSize + kNonceSize + 4, 4));
  if (h.role != Role::kTenant && h.tenant != 0) {
    return Status::InvalidArgument("handshake hello: a tenant id without the tenant role");
  }
  return h;
}

Result<Nonce> DecodeChallenge(std::span<const uint8_t> bytes) {
  PULSE_RETURN_IF_ERROR(CheckSize(Kind::kChallenge, bytes, kChallengeSize));
  Nonce n;
  std::memcpy(n.data(), bytes.data() + kHeaderSize, kNonceSize);
  return n;
}

Result<Signed> DecodeProof(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderSize) return Status::InvalidArgument("handshake proof: truncated");
  PULSE_RETURN_IF_ERROR(CheckHeader(Kind::kProof, bytes));
  return DecodeSigned(Kind::kProof, bytes, kHeaderSize);
}

Result<Verdict> DecodeVerdict(std::span<const uint8_t> bytes) {
  if (bytes.size() < kVerdictPrefixSize) return Status::InvalidArgument("handshake verdict: truncated");
  PULSE_RETURN_IF_ERROR(CheckHeader(Kind::kVerdict, bytes));
  Verdict v;
  v.code = static_cast<uint32_t>(GetLE(bytes.data() + kHeaderSize, 4));
  if (v.code == 0) {
    PULSE_ASSIGN_OR_RETURN(v.accepted, DecodeSigned(Kind::kVerdict, bytes, kVerdictPrefixSize));
    return v;
  }
  if (bytes.size() < kVerdictPrefixSize + 4) return Status::InvalidArgument("handshake verdict: truncated");
  const uint64_t length = GetLE(bytes.data() + kVerdictPrefixSize, 4);
  if (length > kMaxRefusalText || bytes.size() != kVerdictPrefixSize + 4 + length) {
    return Status::InvalidArgument("handshake verdict: bad refusal text length " + std::to_string(length));
  }
  v.text.assign(reinterpret_cast<const char*>(bytes.data()) + kVerdictPrefixSize + 4, length);
  return v;
}

Result<std::optional<size_t>> MessageSize(Kind kind, std::span<const uint8_t> prefix,
                                          size_t* need_at_least) {
  if (prefix.size() < kHeaderSize) {
    *need_at_least = kHeaderSize;
    return std::optional<size_t>();
  }
  PULSE_RETURN_IF_ERROR(CheckHeader(kind, prefix.first(kHeaderSize)));
  switch (kind) {
    case Kind::kHello:
      return std::optional<size_t>(kHelloSize);
    case Kind::kChallenge:
      return std::optional<size_t>(kChallengeSize);
    case Kind::kProof:
    case Kind::kVerdict: {
      size_t fixed = kind == Kind::kProof ? kHeaderSize : kVerdictPrefixSize;
      if (kind == Kind::kVerdict) {
        if (prefix.size() < kVerdictPrefixSize) {
          *need_at_least = kVerdictPrefixSize;
          return std::optional<size_t>();
        }
        if (GetLE(prefix.data() + kHeaderSize, 4) != 0) {  // refused: text length, text
          if (prefix.size() < kVerdictPrefixSize + 4) {
            *need_at_least = kVerdictPrefixSize + 4;
            return std::optional<size_t>();
          }
          const uint64_t length = GetLE(prefix.data() + kVerdictPrefixSize, 4);
          if (length > kMaxRefusalText) return Status::InvalidArgument("handshake verdict: refusal text too long");
          return std::optional<size_t>(kVerdictPrefixSize + 4 + length);
        }
      }
      if (prefix.size() < fixed + 12) {
        *need_at_least = fixed + 12;
        return std::optional<size_t>();
      }
      const uint64_t length = GetLE(prefix.data() + fixed + 8, 4);
      if (length == 0 || length > kMaxWorkerAddress) {
        return Status::InvalidArgument("handshake: worker address length " + std::to_string(length) +
                                       " outside [1, " + std::to_string(kMaxWorkerAddress) + "]");
      }
      return std::optional<size_t>(fixed + 12 + kProofSize + length);
    }
  }
  return Status::InvalidArgument("handshake: unknown message kind");
}

Proof ComputeProof(std::span<const uint8_t> key, const char* label, const Hello& hello,
                   const Nonce& server_nonce, uint64_t endpoint_id,
                   std::span<const uint8_t> address) {
  std::vector<uint8_t> msg(label, label + std::strlen(label) + 1);  // with its NUL: a separator
  const std::vector<uint8_t> h = EncodeHello(hello);
  msg.insert(msg.end(), h.begin(), h.end());
  msg.insert(msg.end(), server_nonce.begin(), server_nonce.end());
  PutU64(&msg, endpoint_id);
  PutU32(&msg, static_cast<uint32_t>(address.size()));
  msg.insert(msg.end(), address.begin(), address.end());
  Proof out{};
  unsigned int out_len = 0;
  static const uint8_t kEmpty = 0;
  HMAC(EVP_sha256(), key.empty() ? &kEmpty : key.data(), static_cast<int>(key.size()), msg.data(), msg.size(),
       out.data(), &out_len);
  return out;
}

bool ProofsEqual(const Proof& a, const Proof& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

Status RandomBytes(std::span<uint8_t> out) {
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) {
    return Status::Internal("handshake: the random number generator failed");
  }
  return Status::Ok();
}

}  // namespace pulse::net::handshake
