#include "node/node_control.h"

#include <sys/resource.h>

#include <fmt/format.h>

#include "pulse/cluster.h"

namespace pulse::node {

using nlohmann::json;

Result<ControlRequest> ParseControl(std::span<const uint8_t> payload, json* seq) {
  *seq = nullptr;
  json body = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Status::InvalidArgument("control: the message is not JSON");
  if (!body.is_object()) return Status::InvalidArgument("control: the message is not a JSON object");
  if (auto it = body.find("seq"); it != body.end()) *seq = *it;
  auto op = body.find("op");
  if (op == body.end() || !op->is_string())
    return Status::InvalidArgument("control: \"op\" must be a string");
  ControlRequest r;
  r.op = op->get<std::string>();
  r.seq = *seq;
  r.body = std::move(body);
  return r;
}

Result<uint64_t> GetU64(const json& body, const char* field, std::string_view op) {
  auto it = body.find(field);
  if (it == body.end()) return Status::InvalidArgument(fmt::format("{}: {} is missing", op, field));
  const bool negative = it->is_number_integer() && !it->is_number_unsigned() && it->get<int64_t>() < 0;
  if (!it->is_number_integer() || negative)
    return Status::InvalidArgument(fmt::format("{}: {} must be a non-negative integer", op, field));
  return it->get<uint64_t>();
}

Result<uint32_t> GetU32(const json& body, const char* field, std::string_view op) {
  PULSE_ASSIGN_OR_RETURN(uint64_t v, GetU64(body, field, op));
  if (v > UINT32_MAX)
    return Status::InvalidArgument(fmt::format("{}: {} must fit in 32 bits", op, field));
  return static_cast<uint32_t>(v);
}

Result<std::string> GetString(const json& body, const char* field, std::string_view op) {
  auto it = body.find(field);
  if (it == body.end()) return Status::InvalidArgument(fmt::format("{}: {} is missing", op, field));
  if (!it->is_string()) return Status::InvalidArgument(fmt::format("{}: {} must be a string", op, field));
  return it->get<std::string>();
}

static std::vector<uint8_t> Bytes(const json& j) {
  std::string text = j.dump();
  return std::vector<uint8_t>(text.begin(), text.end());
}

std::vector<uint8_t> ControlOk(const json& seq, json fields) {
  if (!fields.is_object()) fields = json::object();
  fields["seq"] = seq;
  fields["ok"] = true;
  return Bytes(fields);
}

std::vector<uint8_t> ControlError(const json& seq, const Status& error) {
  const Status::Code code = error.ok() ? Status::Code::kInternal : error.code();
  return Bytes(json{{"seq", seq}, {"ok", false}, {"error", error.message()}, {"code", StatusCodeToWire(code)}});
}

json NetCountersJson(const net::Counters& c) {
  return json{{"messages_sent", c.messages_sent},   {"bytes_sent", c.bytes_sent},
              {"messages_received", c.messages_received}, {"bytes_received", c.bytes_received},
              {"messages_dropped", c.messages_dropped}, {"rma_ops", c.rma_ops},
              {"rma_bytes", c.rma_bytes},           {"poll_iterations", c.poll_iterations},
              {"sleeps", c.sleeps},                 {"wakeups", c.wakeups},
              {"sleeps_skipped", c.sleeps_skipped},
              {"wake_calls", c.wake_calls},         {"polls_cut", c.polls_cut},
              {"cpu_demand_reads", c.cpu_demand_reads},         {"endpoints_failed", c.endpoints_failed},
              {"faults_dropped", c.faults_dropped}, {"faults_duplicated", c.faults_duplicated},
              {"faults_reordered", c.faults_reordered},
              {"rma_retransmissions", c.rma_retransmissions}, {"rma_duplicates", c.rma_duplicates}};
}

double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

std::string HexEncode(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

Result<std::vector<uint8_t>> HexDecode(std::string_view hex) {
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return Status::InvalidArgument("hex text of odd length");
  std::vector<uint8_t> out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return Status::InvalidArgument("text that is not hex");
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return out;
}

bool SendControlReply(net::Worker& worker, net::EndpointId to, const nlohmann::json& seq,
                      Result<nlohmann::json> answer, const NodeLog& log) {
  const bool ok = answer.ok();
  std::vector<uint8_t> reply;
  if (ok) {
    reply = ControlOk(seq, std::move(answer).value());
  } else {
    log.Debug("control request from connection {} failed: {}", to, answer.status().ToString());
    reply = ControlError(seq, answer.status());
  }
  Status s = worker.Send(to, kAmControlReply, std::move(reply));
  if (!s.ok()) log.Debug("control reply to connection {}: {}", to, s.ToString());
  return ok;
}

}  // namespace pulse::node
