// RDMA-optimised RPC for kv::Store objects (include/pulse/rpc_rrpc.h).
#include "pulse/rpc_rrpc.h"

#include <cstddef>
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "rpc/handlers/rrpc_state.h"

namespace pulse {
namespace {

// The reply raced a retirement this many times in a row: give up (Aborted).
constexpr int kMaxAsks = 3;

}  // namespace

uint64_t RrpcKeyFingerprint(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  return h == 0 ? 1 : h;  // 0 marks a retired object
}

std::vector<uint8_t> RrpcObjectImage(std::string_view key, std::string_view payload) {
  const RrpcObjectHeader header{RrpcKeyFingerprint(key), payload.size()};
  std::vector<uint8_t> image(sizeof(header) + payload.size());
  std::memcpy(image.data(), &header, sizeof(header));
  std::memcpy(image.data() + sizeof(header), payload.data(), payload.size());
  return image;
}

std::string RrpcObjectRef(uint64_t object) {
  std::string ref(sizeof(object), '\0');
  std::memcpy(ref.data(), &object, sizeof(object));
  return ref;
}

Status RrpcRetireObject(Client* client, uint64_t object) {
  const uint64_t retired = 0;
  return client->Write(object + offsetof(RrpcObjectHeader, fingerprint), &retired, sizeof(retired));
}

Result<std::unique_ptr<RrpcKv>> RrpcKv::Create(RpcClient* rpc, const kv::Store* store, const RrpcOptions& options) {
  if (rpc == nullptr || store == nullptr) return Status::InvalidArgument("RrpcKv: rpc and store are required");
  return std::unique_ptr<RrpcKv>(new RrpcKv(rpc, store, options));
}

RrpcKv::RrpcKv(RpcClient* rpc, const kv::Store* store, const RrpcOptions& options)
    : rpc_(rpc), store_(store), options_(options) {}

void RrpcKv::Invalidate(std::string_view key) { cache_.erase(std::string(key)); }
void RrpcKv::InvalidateAll() { cache_.clear(); }

void RrpcKv::Remember(std::string_view key, const Entry& e) {
  if (!options_.cache_addresses) return;
  if (cache_.size() >= options_.max_cached) cache_.clear();
  cache_[std::string(key)] = e;
}

Result<std::optional<std::string>> RrpcKv::ReadObject(std::string_view key, const Entry& e) {
  std::vector<uint8_t> buf(sizeof(RrpcObjectHeader) + e.length);
  PULSE_RETURN_IF_ERROR(rpc_->client()->Read(e.object, buf.data(), buf.size()));
  RrpcObjectHeader header;
  std::memcpy(&header, buf.data(), sizeof(header));
  if (header.fingerprint != RrpcKeyFingerprint(key) || header.length != e.length) return std::optional<std::string>();
  return std::optional<std::string>(std::string(buf.begin() + sizeof(header), buf.end()));
}

Result<std::optional<std::string>> RrpcKv::Get(std::string_view key) {
  ++counters_.gets;
  if (auto it = cache_.find(std::string(key)); it != cache_.end()) {
    Result<std::optional<std::string>> r =
        options_.values_are_objects ? ReadObject(key, it->second) : ReadItem(key, it->second);
    if (r.ok() && r->has_value()) {
      ++counters_.cached_reads;
      return r;
    }
    ++(r.ok() ? counters_.stale_refused : counters_.read_errors);
    cache_.erase(it);
  }
  return options_.values_are_objects ? Ask(key) : AskItem(key);
}

Result<std::optional<std::string>> RrpcKv::ReadItem(std::string_view key, const Entry& e) {
  PULSE_ASSIGN_OR_RETURN(kv::Store::GetRequest req, store_->MakeGetRequest(key));
  pulse_kv_state st;
  if (req.state.size() != sizeof(st) || e.length > sizeof(st.data))
    return Status::Internal("RrpcKv: a GET state or cached item of an unexpected size");
  std::memcpy(&st, req.state.data(), sizeof(st));
  uint64_t item[PULSE_KV_WINDOW_WORDS] = {};
  PULSE_RETURN_IF_ERROR(rpc_->client()->Read(e.object, item, e.length));
  // The request's data holds the key's item image: header (lengths) and key.
  if ((item[0] & 0xffff) != (st.data[0] & 0xffff)) return std::optional<std::string>();
  for (uint64_t w = 1; w <= st.key_words; ++w)
    if (item[w] != st.data[w]) return std::optional<std::string>();
  std::memcpy(st.data, item, e.length);
  st.outcome = PULSE_KV_HIT;
  st.item = e.object;
  PULSE_ASSIGN_OR_RETURN(std::optional<std::string> value,
                         store_->GetAnswer(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&st), sizeof(st))));
  if (!value.has_value()) return Status::Internal("RrpcKv: a cached item the store does not answer");
  return value;
}

Result<std::optional<std::string>> RrpcKv::AskItem(std::string_view key) {
  PULSE_ASSIGN_OR_RETURN(kv::Store::GetRequest req, store_->MakeGetRequest(key));
  ++counters_.rpcs;
  PULSE_ASSIGN_OR_RETURN(RpcResult r, rpc_->Call(kRpcKvGet, req.start, req.state));
  if (r.status != TraversalStatus::kDone) return TraversalStatusError(r.status, "RrpcKv GET", r.fault_addr);
  PULSE_ASSIGN_OR_RETURN(std::optional<std::string> value, store_->GetAnswer(r.state));
  if (!value.has_value()) {
    Invalidate(key);
    return value;
  }
  pulse_kv_state st;
  std::memcpy(&st, r.state.data(), sizeof(st));  // GetAnswer checked its size
  ++counters_.inline_replies;
  Remember(key, Entry{st.item, std::min<uint64_t>(st.item_words, PULSE_KV_WINDOW_WORDS) * 8});
  return value;
}

Result<std::optional<std::string>> RrpcKv::Ask(std::string_view key) {
  PULSE_ASSIGN_OR_RETURN(kv::Store::GetRequest req, store_->MakeGetRequest(key));
  if (req.state.size() != sizeof(pulse_kv_state))
    return Status::Internal(fmt::format("RrpcKv: a GET state of {} bytes, not {}", req.state.size(), sizeof(pulse_kv_state)));
  for (int ask = 0; ask < kMaxAsks; ++ask) {
    rpc::RrpcKvState st{};
    std::memcpy(&st.kv, req.state.data(), sizeof(st.kv));
    st.phase = rpc::kRrpcWalking;
    st.inline_limit = options_.inline_threshold;
    ++counters_.rpcs;
    PULSE_ASSIGN_OR_RETURN(
        RpcResult r, rpc_->Call(kRpcKvGetObject, req.start,
                                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&st), sizeof(st))));
    if (r.status != TraversalStatus::kDone) return TraversalStatusError(r.status, "RrpcKv GET", r.fault_addr);
    if (r.state.size() != sizeof(st))
      return Status::Internal(fmt::format("RrpcKv: a reply state of {} bytes, not {}", r.state.size(), sizeof(st)));
    std::memcpy(&st, r.state.data(), sizeof(st));
    if (st.kv.outcome != PULSE_KV_HIT) {
      Invalidate(key);
      return std::optional<std::string>();
    }
    if (st.fingerprint != RrpcKeyFingerprint(key))
      return Status::Internal(fmt::format("RrpcKv: the object at {:#x} that key '{}' names holds fingerprint {:#x}",
                                          st.object, key, st.fingerprint));
    const Entry e{st.object, st.length};
    if (st.inlined != 0) {
      if (r.output.size() != st.length)
        return Status::Internal(fmt::format("RrpcKv: an inline payload of {} bytes for an object of {}",
                                            r.output.size(), st.length));
      ++counters_.inline_replies;
      Remember(key, e);
      return std::optional<std::string>(std::string(r.output.begin(), r.output.end()));
    }
    ++counters_.address_replies;
    PULSE_ASSIGN_OR_RETURN(std::optional<std::string> payload, ReadObject(key, e));
    if (payload.has_value()) {
      Remember(key, e);
      return payload;
    }
    // Retired between the reply and the read: ask again.
  }
  return Status::Aborted(fmt::format("RrpcKv: key '{}''s object was retired under {} GETs in a row", key, kMaxAsks));
}

}  // namespace pulse
