#include "protocol/outbox.h"

#include <algorithm>

#include <fmt/format.h>

#include "pulse/cluster.h"

namespace pulse {

void Outbox::Add(net::EndpointId to, std::vector<uint8_t> bytes, uint64_t tag) {
  auto it = std::find_if(queues_.begin(), queues_.end(), [to](const auto& q) { return q.first == to; });
  if (it == queues_.end()) it = queues_.emplace(queues_.end(), to, std::vector<Entry>{});
  it->second.push_back(Entry{std::move(bytes), tag});
  ++queued_;
}

void Outbox::Flush(const FailedFn& failed) {
  if (queued_ == 0) return;
  // `failed` may add to this outbox: what it adds waits for the next flush.
  std::vector<std::pair<net::EndpointId, std::vector<Entry>>> queues;
  queues.swap(queues_);
  queued_ = 0;
  for (auto& [to, entries] : queues) {
    size_t begin = 0;
    while (begin < entries.size()) {
      // The longest run from `begin` within the limits (at least one).
      size_t end = begin + 1;
      size_t bytes = kBatchHeaderBytes + sizeof(uint32_t) + entries[begin].bytes.size();
      while (end < entries.size() && end - begin < limits_.max_messages) {
        const size_t more = sizeof(uint32_t) + entries[end].bytes.size();
        if (bytes + more > limits_.max_bytes) break;
        bytes += more;
        ++end;
      }
      SendRun(to, entries, begin, end, failed);
      begin = end;
    }
  }
}

void Outbox::SendRun(net::EndpointId to, std::vector<Entry>& entries, size_t begin, size_t end,
                     const FailedFn& failed) {
  const size_t count = end - begin;
  std::vector<uint8_t> payload;
  if (count == 1) {
    // Alone, as it would have travelled without aggregation.
    payload = entries[begin].bytes;
  } else {
    std::vector<std::vector<uint8_t>> run;
    run.reserve(count);
    for (size_t i = begin; i < end; ++i) run.push_back(std::move(entries[i].bytes));
    payload = EncodeBatch(kAmTraversal, run);
    // Back where they were, for `failed`.
    for (size_t i = begin; i < end; ++i) entries[i].bytes = std::move(run[i - begin]);
  }
  const size_t n = payload.size();
  Status s = worker_->Send(to, count == 1 ? kAmTraversal : kAmBatch, std::move(payload));
  if (!s.ok()) {
    counters_.failed += count;
    if (failed)
      for (size_t i = begin; i < end; ++i) failed(to, std::move(entries[i]), s);
    return;
  }
  ++counters_.messages;
  counters_.carried += count;
  counters_.bytes += n;
  if (count > 1) ++counters_.envelopes;
}

Status UnpackTraversalBatch(std::span<const uint8_t> envelope, InboundBatches* counters,
                            const std::function<void(std::span<const uint8_t>)>& handle) {
  Result<DecodedBatch> batch = DecodeBatch(envelope);
  if (batch.ok() && batch->inner_am != kAmTraversal)
    batch = Status::InvalidArgument(
        fmt::format("batch envelope: inner message id {} is not kAmTraversal ({})", batch->inner_am, kAmTraversal));
  if (!batch.ok()) {
    ++counters->malformed;
    return Status::InvalidArgument(fmt::format("{} ({} bytes)", batch.status().message(), envelope.size()));
  }
  ++counters->envelopes;
  counters->carried += batch->messages.size();
  for (std::span<const uint8_t> m : batch->messages) handle(m);
  return Status::Ok();
}

nlohmann::json InboundJson(const InboundBatches& c) {
  return {{"envelopes_in", c.envelopes}, {"carried_in", c.carried}, {"malformed_envelopes", c.malformed}};
}

nlohmann::json OutboxJson(const Outbox::Counters& c) {
  return {{"messages", c.messages},
          {"carried", c.carried},
          {"envelopes", c.envelopes},
          {"bytes", c.bytes},
          {"failed", c.failed},
          {"per_message", c.messages == 0 ? 0.0 : static_cast<double>(c.carried) / static_cast<double>(c.messages)}};
}

}  // namespace pulse
