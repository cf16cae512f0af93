// Decoding the outcome of a control reply (kAmControlReply) on the calling
// side.  A node answers {"seq":..,"ok":true,...} or
// {"seq":..,"ok":false,"error":"msg","code":N} where N is
// StatusCodeToWire(code) of the node's Status (the builder is
// node::ControlError in src/memnode/node_control.h).  Decisions are made on
// the code, never on "error"'s text.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse {

// OK if reply["ok"] is true.  Otherwise the peer's error with the peer's
// code, its message prefixed with `context` (e.g. "control alloc: no ...")
// when context is not empty; a missing or non-string "error" reads as
// "refused".  Codes:
//  - "code" missing (a peer older than codes on the wire): InvalidArgument,
//    the code every control error was reported with before, so that such a
//    peer's callers behave as they did;
//  - "code" not a non-negative integer, or one this build does not know,
//    or 0 on a reply that says "ok": false: Internal naming it (an error
//    must never turn into success);
//  - otherwise StatusFromWire(code).
// A reply that is not a JSON object is Internal.  Thread-safe (a pure
// function).
Status ControlReplyStatus(const nlohmann::json& reply, std::string_view context = {});

}  // namespace pulse
