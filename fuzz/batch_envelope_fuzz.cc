// Fuzz target: a kAmBatch envelope as a receiver takes it apart
// (include/pulse/message_batch.h): DecodeBatch, then each inner message
// through DecodeMessage as if it had arrived alone.  An envelope that
// decodes must hold only views inside the input that cover it exactly, and
// encode back to the same bytes; anything else must be refused, not read.
#include "fuzz_check.h"
#include "pulse/message_batch.h"
#include "pulse/protocol.h"

namespace pulse::fuzz {

void FuzzBatchEnvelope(std::span<const uint8_t> data) {
  Result<DecodedBatch> batch = DecodeBatch(data);
  if (!batch.ok()) return;
  const size_t n = batch->messages.size();
  PULSE_FUZZ_CHECK(n >= 2 && n <= kMaxBatchMessages, "{} inner messages accepted", n);
  std::vector<std::vector<uint8_t>> copies;
  for (std::span<const uint8_t> m : batch->messages) {
    PULSE_FUZZ_CHECK(!m.empty(), "an empty inner message accepted");
    PULSE_FUZZ_CHECK(m.data() >= data.data() && m.data() + m.size() <= data.data() + data.size(),
                     "an inner message of {} bytes lies outside the envelope", m.size());
    copies.emplace_back(m.begin(), m.end());
    // Each inner message is decoded as a lone one would be: no crash, and a
    // good one re-encodes to itself.
    Result<TraversalMessage> inner = DecodeMessage(m, 64 * 1024);
    if (inner.ok())
      PULSE_FUZZ_CHECK(EncodeMessage(*inner) == copies.back(), "an inner message changed on re-encoding");
  }
  PULSE_FUZZ_CHECK(BatchEnvelopeBytes(copies) == data.size(), "the inner messages do not cover the envelope");
  PULSE_FUZZ_CHECK(EncodeBatch(batch->inner_am, copies) == std::vector<uint8_t>(data.begin(), data.end()),
                   "decode/encode round trip changed the envelope");
}

}  // namespace pulse::fuzz
