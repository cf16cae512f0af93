// Fuzz target: the bytes a stranger sends to a pulse listener (and a
// listener to a connecting peer), through the handshake's framing and
// decoders (src/net/handshake.h).  The first byte picks the message kind;
// the rest arrives as a reader on a socket would see it, in chunks whose
// sizes come from the input too.  Checks: the reader never asks for more
// than the limits allow nor reads past the message it sized; a message that
// decodes re-encodes to the same bytes; a proof verifies only with the key
// that made it.
#include <algorithm>

#include "fuzz_check.h"
#include "net/handshake.h"

namespace pulse::fuzz {

void FuzzHandshake(std::span<const uint8_t> data) {
  using namespace net::handshake;
  if (data.empty()) return;
  const Kind kind = static_cast<Kind>(1 + data[0] % 4);
  std::span<const uint8_t> rest = data.subspan(1);
  const size_t limit = kProofFixedSize + kMaxWorkerAddress + 16;

  // The socket reader (src/net/link.cc ReadMessage): ask MessageSize how
  // much is needed, read at most that.
  std::vector<uint8_t> in;
  size_t offset = 0;
  for (;;) {
    size_t need = 0;
    auto size = MessageSize(kind, in, &need);
    if (!size.ok()) return;  // the connection would be closed
    if (size->has_value()) need = **size;
    PULSE_FUZZ_CHECK(need <= limit, "the reader asked for {} bytes (limit {})", need, limit);
    PULSE_FUZZ_CHECK(need >= in.size(), "the reader needs {} bytes but holds {}", need, in.size());
    if (size->has_value() && in.size() == need) break;
    if (offset >= rest.size()) return;  // the peer stopped sending: the deadline closes it
    const size_t chunk = std::min<size_t>({need - in.size(), rest.size() - offset, size_t{1} + rest[offset] % 64});
    in.insert(in.end(), rest.begin() + offset, rest.begin() + offset + chunk);
    offset += chunk;
  }

  switch (kind) {
    case Kind::kHello: {
      auto h = DecodeHello(in);
      if (h.ok()) PULSE_FUZZ_CHECK(EncodeHello(*h) == in, "hello does not round-trip");
      break;
    }
    case Kind::kChallenge: {
      auto n = DecodeChallenge(in);
      PULSE_FUZZ_CHECK(n.ok(), "a framed challenge does not decode: {}", n.status().ToString());
      PULSE_FUZZ_CHECK(EncodeChallenge(*n) == in, "challenge does not round-trip");
      break;
    }
    case Kind::kProof: {
      auto p = DecodeProof(in);
      if (!p.ok()) break;
      PULSE_FUZZ_CHECK(EncodeProof(*p) == in, "proof does not round-trip");
      PULSE_FUZZ_CHECK(!p->address.empty() && p->address.size() <= kMaxWorkerAddress, "address size {}",
                       p->address.size());
      // The proof the listener would compute, with two different keys: at
      // most one can match what the peer sent.
      const Hello hello;
      const Nonce nonce{};
      const std::vector<uint8_t> key_a(32, 1), key_b(32, 2);
      const bool a = ProofsEqual(p->proof, ComputeProof(key_a, kClientLabel, hello, nonce, p->endpoint_id, p->address));
      const bool b = ProofsEqual(p->proof, ComputeProof(key_b, kClientLabel, hello, nonce, p->endpoint_id, p->address));
      PULSE_FUZZ_CHECK(!(a && b), "one proof matched two keys");
      break;
    }
    case Kind::kVerdict: {
      auto v = DecodeVerdict(in);
      if (v.ok()) PULSE_FUZZ_CHECK(EncodeVerdict(*v) == in, "verdict does not round-trip");
      break;
    }
  }
}

}  // namespace pulse::fuzz
