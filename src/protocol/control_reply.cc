#include "protocol/control_reply.h"

#include <cstdint>
#include <string>

namespace pulse {

Status ControlReplyStatus(const nlohmann::json& reply, std::string_view context) {
  std::string message(context);
  if (!message.empty()) message += ": ";
  if (!reply.is_object()) return Status::Internal(message + "the reply is not a JSON object");
  if (auto ok = reply.find("ok"); ok != reply.end() && ok->is_boolean() && ok->get<bool>()) return Status::Ok();
  auto error = reply.find("error");
  message += error != reply.end() && error->is_string() ? error->get<std::string>() : std::string("refused");
  auto code = reply.find("code");
  if (code == reply.end()) return Status::InvalidArgument(std::move(message));  // a peer older than codes
  if (!code->is_number_unsigned() || code->get<uint64_t>() > UINT32_MAX)
    return Status::Internal("peer error code " + code->dump() + ": " + message);
  return StatusFromWire(code->get<uint32_t>(), std::move(message));
}

}  // namespace pulse
