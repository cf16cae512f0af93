// pulse's connection handshake: the only bytes a Worker's listening port
// reads from a stranger.  Pure encoding, decoding and proof computation (no
// sockets: src/net/link.cc drives it), so that a fuzz target can feed it
// anything (fuzz/handshake_fuzz.cc).
//
// Over one TCP connection from the connecting side C to the listener S:
//   1. C -> S  ClientHello   magic, version, C's nonce, role, tenant
//   2. S -> C  Challenge     magic, version, S's nonce
//   3. C -> S  ClientProof   C's endpoint id, C's UCX worker address,
//                            HMAC(K, "pulse-client" | hello | S's nonce |
//                            id | address)
//   4. S -> C  Verdict       refused: a status code and a short message;
//                            accepted: S's endpoint id and worker address
//                            and HMAC(K, "pulse-server" | the same | S's
//                            id | address), which C checks
// K is the cluster secret for role kCluster and the tenant's key
// (DeriveTenantKey) for role kTenant.  Every message has a fixed header and
// every length is checked against a limit before anything is allocated; a
// message that fails a check ends the connection.  Only after step 4 does
// either side hand a worker address to UCX.  docs/security.md has the
// threat model.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pulse/status.h"

namespace pulse::net::handshake {

inline constexpr uint32_t kMagic = 0x48534c50;  // "PLSH" little-endian
inline constexpr uint16_t kVersion = 1;
inline constexpr size_t kNonceSize = 32;
inline constexpr size_t kProofSize = 32;  // HMAC-SHA256
// A UCX worker address is a few hundred bytes per device; this leaves room
// for many devices and bounds what a peer can make us buffer.
inline constexpr size_t kMaxWorkerAddress = 16384;
inline constexpr size_t kMaxRefusalText = 256;

enum class Kind : uint16_t { kHello = 1, kChallenge = 2, kProof = 3, kVerdict = 4 };
// Who the connecting side claims to be (and proves with the matching key).
enum class Role : uint8_t { kOpen = 0, kCluster = 1, kTenant = 2 };

using Nonce = std::array<uint8_t, kNonceSize>;
using Proof = std::array<uint8_t, kProofSize>;

// Every message starts with magic, version, kind (8 bytes).
inline constexpr size_t kHeaderSize = 8;
inline constexpr size_t kHelloSize = kHeaderSize + kNonceSize + 8;      // + role, 3 pad, tenant
inline constexpr size_t kChallengeSize = kHeaderSize + kNonceSize;
// Fixed part of a ClientProof and of an accepting Verdict: endpoint id,
// address length, proof; the address follows.
inline constexpr size_t kProofFixedSize = kHeaderSize + 8 + 4 + kProofSize;
// Fixed part of a Verdict: header, u32 status code (0: accepted), then
// either the proof part (id, length, proof, address) or u32 text length and
// the text.
inline constexpr size_t kVerdictPrefixSize = kHeaderSize + 4;

struct Hello {
  Nonce nonce{};
  Role role = Role::kOpen;
  uint32_t tenant = 0;  // kTenant only
};

// ClientProof and accepting Verdict share this body.
struct Signed {
  uint64_t endpoint_id = 0;
  std::vector<uint8_t> address;  // UCX worker address
  Proof proof{};
};

struct Verdict {
  uint32_t code = 0;  // StatusCodeToWire; 0 = accepted
  std::string text;   // refused only
  Signed accepted;    // accepted only
};

std::vector<uint8_t> EncodeHello(const Hello& h);
std::vector<uint8_t> EncodeChallenge(const Nonce& n);
std::vector<uint8_t> EncodeProof(const Signed& s);
std::vector<uint8_t> EncodeVerdict(const Verdict& v);

// Decoders take exactly one whole message.  Errors: InvalidArgument naming
// the field (bad magic, version, kind, role, length).
Result<Hello> DecodeHello(std::span<const uint8_t> bytes);
Result<Nonce> DecodeChallenge(std::span<const uint8_t> bytes);
Result<Signed> DecodeProof(std::span<const uint8_t> bytes);
Result<Verdict> DecodeVerdict(std::span<const uint8_t> bytes);

// How many bytes the message that starts with `prefix` has in all, once
// enough of it is there to tell: the fixed size, or the fixed part plus the
// length field it carries.  nullopt: read more (at least `need_at_least`
// bytes in all).  Errors: InvalidArgument if the prefix is already wrong
// (magic, version, kind) or announces more than the limit.
Result<std::optional<size_t>> MessageSize(Kind kind, std::span<const uint8_t> prefix,
                                          size_t* need_at_least);

// HMAC-SHA256(key, label | hello | server nonce | id | address).  An empty
// key is allowed (peers without credentials).
Proof ComputeProof(std::span<const uint8_t> key, const char* label, const Hello& hello,
                   const Nonce& server_nonce, uint64_t endpoint_id,
                   std::span<const uint8_t> address);
inline constexpr const char* kClientLabel = "pulse-client-v1";
inline constexpr const char* kServerLabel = "pulse-server-v1";

// Constant-time comparison.
bool ProofsEqual(const Proof& a, const Proof& b);
// Cryptographically random bytes.  Errors: Internal if the generator fails.
Status RandomBytes(std::span<uint8_t> out);

}  // namespace pulse::net::handshake
