// The control-message plumbing shared by the node processes (the switch
// includes this header too): parsing a kAmControl JSON request, reading its
// fields with errors that name them, and building kAmControlReply answers.
// The operations themselves are in include/pulse/cluster.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/node_log.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::node {

struct ControlRequest {
  std::string op;
  nlohmann::json seq;   // echoed in the answer (null if absent)
  nlohmann::json body;  // the whole request object
};

// Parses a request.  InvalidArgument "control: ..." if it is not a JSON
// object with a string "op"; *seq receives "seq" whenever it can be read,
// so that even a bad request gets an answer the sender can match.
Result<ControlRequest> ParseControl(std::span<const uint8_t> payload, nlohmann::json* seq);

// Field readers.  Errors name the operation and the field, e.g.
// "alloc: bytes must be a non-negative integer".
Result<uint64_t> GetU64(const nlohmann::json& body, const char* field, std::string_view op);
Result<uint32_t> GetU32(const nlohmann::json& body, const char* field, std::string_view op);
Result<std::string> GetString(const nlohmann::json& body, const char* field, std::string_view op);

// {"seq":seq,"ok":true, ...fields}.
std::vector<uint8_t> ControlOk(const nlohmann::json& seq, nlohmann::json fields = nlohmann::json::object());
// {"seq":seq,"ok":false,"error":message,"code":StatusCodeToWire(code)} for
// a non-OK `error`: the caller rebuilds the same Status with
// ControlReplyStatus (src/protocol/control_reply.h).  An OK `error` is a
// programming error; it is sent as kInternal so that it cannot read as
// success.
std::vector<uint8_t> ControlError(const nlohmann::json& seq, const Status& error);

// Sends the answer to control request `seq` to `to`: ControlOk with the
// value, or ControlError with the status (logged at debug level).
// Returns false if the answer was an error.
bool SendControlReply(net::Worker& worker, net::EndpointId to, const nlohmann::json& seq,
                      Result<nlohmann::json> answer, const NodeLog& log);

// The Worker's counters as a JSON object.
nlohmann::json NetCountersJson(const net::Counters& c);

// CPU seconds (user + system) this process has used.
double ProcessCpuSeconds();

// "0123ab..." for bytes.
std::string HexEncode(std::span<const uint8_t> bytes);
// The bytes of HexEncode's text (either case); InvalidArgument for a
// character that is no hex digit or an odd length.
Result<std::vector<uint8_t>> HexDecode(std::string_view hex);

}  // namespace pulse::node
