// Fuzz target: a traversal message as the switch handles it: decode (the
// limits of SwitchServerOptions), route over a fixed table of three memory
// nodes, re-encode for the next hop.  The decision must agree with the
// routing table, and the re-encoded message must decode to itself.
#include "fuzz_check.h"
#include "message_equal.h"
#include "pulse/protocol.h"
#include "switch/router.h"
#include "switch/switch_server.h"

namespace pulse::fuzz {
void FuzzSwitchMessage(std::span<const uint8_t> data) {
  const switchd::SwitchServerOptions options;
  auto decoded = DecodeMessage(data, options.max_scratch_bytes);
  if (!decoded.ok()) return;
  TraversalMessage m = std::move(decoded).value();
  // The message re-encodes to the bytes it came from.
  PULSE_FUZZ_CHECK(EncodeMessage(m) == std::vector<uint8_t>(data.begin(), data.end()),
                   "decode/encode round trip changed the message");
  Router router;
  PULSE_FUZZ_CHECK(router.AddRange(0x10000, 0x10000, 1).ok(), "route 1");
  PULSE_FUZZ_CHECK(router.AddRange(0x20000, 0x10000, 2).ok(), "route 2");
  PULSE_FUZZ_CHECK(router.AddRange(0x40000, 0x1000, 3).ok(), "route 3");
  const TraversalMessage before = m;
  const RouteDecision d = router.Route(&m);
  if (d.to == RouteDecision::To::kMemoryNode) {
    PULSE_FUZZ_CHECK(m.kind == MessageKind::kRequest, "a response routed to memory node {}", d.node);
    auto owner = router.Owner(m.cur_ptr);
    PULSE_FUZZ_CHECK(owner && *owner == d.node, "cur_ptr {:#x} routed to node {}, not its owner", m.cur_ptr,
                     d.node);
  } else {
    PULSE_FUZZ_CHECK(m.kind == MessageKind::kResponse, "a request sent back to CPU node {}", d.node);
    PULSE_FUZZ_CHECK(d.node == m.cpu_node, "response for CPU node {} sent to {}", m.cpu_node, d.node);
  }
  PULSE_FUZZ_CHECK(m.request_id == before.request_id && m.scratch == before.scratch && m.tenant == before.tenant,
                   "routing changed the request id, tenant or scratch pad");
  auto again = DecodeMessage(EncodeMessage(m), options.max_scratch_bytes);
  PULSE_FUZZ_CHECK(again.ok(), "the routed message does not decode: {}", again.status().ToString());
  PULSE_FUZZ_CHECK(SameMessage(*again, m), "the routed message changed on the wire");
}

}  // namespace pulse::fuzz
