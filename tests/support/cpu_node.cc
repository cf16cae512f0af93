#include "support/cpu_node.h"

#include <unistd.h>

#include <cstdlib>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace pulse::testing {

void SetUcxTestEnvironment() {
  setenv("UCX_POSIX_ERROR_HANDLING", "y", 1);
  setenv("UCX_SYSV_ERROR_HANDLING", "y", 1);
}

uint32_t RandomNumber() {
  static std::mt19937 rng(std::random_device{}() ^ static_cast<uint32_t>(getpid()));
  return rng();
}

std::vector<uint8_t> HexDecode(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

TestCpuNode::TestCpuNode(std::optional<net::Credentials> credentials) {
  SetUcxTestEnvironment();
  net::WorkerOptions options;
  options.name = "test-cpu";
  options.credentials = std::move(credentials);
  auto w = net::Worker::Create(options);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (!w.ok()) return;
  worker_ = std::move(w).value();
  worker_->SetHandler(kAmControlReply, [this](net::EndpointId, std::span<const uint8_t> p) {
    json reply = json::parse(p.begin(), p.end(), nullptr, false);
    if (reply.is_object() && reply.contains("seq") && reply["seq"].is_number_unsigned())
      replies_[reply["seq"].get<uint64_t>()] = reply;
  });
  worker_->SetHandler(kAmTraversal, [this](net::EndpointId, std::span<const uint8_t> p) {
    auto m = DecodeMessage(p, 1 << 20);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (m.ok()) responses_.emplace(m->request_id, std::move(m).value());
  });
  // Aggregated responses: nodes send only well-formed envelopes.
  worker_->SetHandler(kAmBatch, [this](net::EndpointId, std::span<const uint8_t> p) {
    auto batch = DecodeBatch(p);
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    if (!batch.ok()) return;
    ++envelopes_received_;
    for (std::span<const uint8_t> inner : batch->messages) {
      auto m = DecodeMessage(inner, 1 << 20);
      EXPECT_TRUE(m.ok()) << m.status().ToString();
      if (m.ok()) responses_.emplace(m->request_id, std::move(m).value());
    }
  });
}

Result<net::EndpointId> TestCpuNode::Connect(const std::string& address, Clock::duration timeout) {
  const size_t colon = address.rfind(':');
  return worker_->Connect(address.substr(0, colon), static_cast<uint16_t>(std::stoi(address.substr(colon + 1))),
                          timeout);
}

json TestCpuNode::Call(net::EndpointId ep, json request, Clock::duration timeout) {
  const uint64_t seq = next_seq_++;
  request["seq"] = seq;
  std::string text = request.dump();
  Status s = worker_->Send(ep, kAmControl,
                           std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  if (!s.ok()) return json();
  (void)worker_->RunUntil([&] { return replies_.count(seq) != 0; }, timeout);
  auto it = replies_.find(seq);
  if (it == replies_.end()) return json();
  json reply = std::move(it->second);
  replies_.erase(it);
  return reply;
}

Status TestCpuNode::SendTraversal(net::EndpointId ep, const TraversalMessage& m) {
  return worker_->Send(ep, kAmTraversal, EncodeMessage(m));
}

Status TestCpuNode::SendRaw(net::EndpointId ep, std::vector<uint8_t> bytes) {
  return worker_->Send(ep, kAmTraversal, std::move(bytes));
}

Status TestCpuNode::SendRawBatch(net::EndpointId ep, std::vector<uint8_t> bytes) {
  return worker_->Send(ep, kAmBatch, std::move(bytes));
}

Result<TraversalMessage> TestCpuNode::WaitResponse(uint64_t request_id, Clock::duration timeout) {
  Status s = worker_->RunUntil([&] { return responses_.count(request_id) != 0; }, timeout);
  if (!s.ok()) return Status::Timeout(fmt::format("no response to request {:#x}", request_id));
  TraversalMessage m = std::move(responses_[request_id]);
  responses_.erase(request_id);
  return m;
}

void TestCpuNode::Pump(Clock::duration d) { (void)worker_->RunUntil([] { return false; }, d); }

}  // namespace pulse::testing
