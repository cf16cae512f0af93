// RDMA-optimised RPC (include/pulse/rpc_rrpc.h) against a real local cluster
// of two memory nodes: every GET's bytes equal the object's payload and the
// all-inline path's, for sizes around the threshold, with objects on either
// node (a re-issue at the object); the path each size takes is counted; a
// cached address serves the next GET alone; a stale cached address (the
// object retired and moved, or its memory reused for another key) is
// refused and the GET asked again, never answered with other bytes.
#include <string>
#include <unordered_map>
#include <vector>

#include "pulse/rpc_rrpc.h"
#include "support/ds_cluster.h"

namespace pulse::ds::testing {
namespace {

class Rrpc : public DsCluster {
 protected:
  void SetUp() override {
    DsCluster::SetUp();
    if (HasFatalFailure()) return;
    ClientOptions co = RackClientOptions();
    co.policy = AllocationPolicy::kPartitioned;
    writer_ = ConnectClient(co);
    ASSERT_NE(writer_, nullptr);
    kv::StoreOptions so;
    so.value_bytes = 8;  // an RrpcObjectRef
    so.expected_items = 1000;
    auto s = kv::Store::Create(writer_.get(), so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    auto r = RpcClient::Create(writer_.get());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    rpc_ = std::move(*r);
  }
  // A payload whose every byte depends on the key and the round.
  static std::string Payload(const std::string& key, size_t bytes, int round) {
    std::string p(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<char>(key.size() * 31 + i * 7 + round * 13 + key.back());
    return p;
  }
  // Writes `key`'s object with `payload` on memory node `node` and points
  // the key at it; the object's address.
  uint64_t PutObject(const std::string& key, const std::string& payload, uint32_t node) {
    const std::vector<uint8_t> image = RrpcObjectImage(key, payload);
    auto addr = writer_->Allocate(image.size(), node);
    EXPECT_TRUE(addr.ok()) << addr.status().ToString();
    if (!addr.ok()) return 0;
    EXPECT_TRUE(writer_->Write(*addr, image.data(), image.size()).ok());
    EXPECT_TRUE(store_->Put(key, RrpcObjectRef(*addr)).ok());
    return *addr;
  }
  std::unique_ptr<RrpcKv> Reader(uint32_t threshold, bool cache) {
    RrpcOptions o;
    o.inline_threshold = threshold;
    o.cache_addresses = cache;
    auto r = RrpcKv::Create(rpc_.get(), store_.get(), o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }
  std::unique_ptr<Client> writer_;
  std::unique_ptr<kv::Store> store_;
  std::unique_ptr<RpcClient> rpc_;
};

TEST_F(Rrpc, SizesAroundTheThresholdMatchTheInlinePath) {
  const std::vector<size_t> sizes = {0, 1, 64, 511, 512, 513, 1024, 4096, 20000};
  std::vector<std::pair<std::string, std::string>> objects;
  for (size_t i = 0; i < sizes.size(); ++i)
    for (uint32_t node = 0; node < 2; ++node) {
      const std::string key = fmt::format("key-{}-{}", sizes[i], node);
      objects.emplace_back(key, Payload(key, sizes[i], 0));
      PutObject(key, objects.back().second, node);
    }
  auto rrpc = Reader(512, /*cache=*/false);
  auto inline_only = Reader(1u << 30, /*cache=*/false);
  ASSERT_NE(rrpc, nullptr);
  ASSERT_NE(inline_only, nullptr);
  uint64_t expect_inline = 0, expect_address = 0;
  for (const auto& [key, payload] : objects) {
    auto a = rrpc->Get(key);
    auto b = inline_only->Get(key);
    ASSERT_TRUE(a.ok()) << key << ": " << a.status().ToString();
    ASSERT_TRUE(b.ok()) << key << ": " << b.status().ToString();
    ASSERT_TRUE(a->has_value()) << key;
    ASSERT_TRUE(b->has_value()) << key;
    EXPECT_EQ(**a, payload) << key;
    EXPECT_EQ(**b, **a) << key;
    ++(payload.size() <= 512 ? expect_inline : expect_address);
  }
  EXPECT_EQ(rrpc->counters().inline_replies, expect_inline);
  EXPECT_EQ(rrpc->counters().address_replies, expect_address);
  EXPECT_EQ(inline_only->counters().inline_replies, objects.size());
  EXPECT_EQ(inline_only->counters().address_replies, 0u);
  EXPECT_EQ(rrpc->cached(), 0u) << "caching was off";
  EXPECT_GT(rpc_->counters().node_crossings, 0u) << "some objects lie on another node than their key's bucket";
  // An absent key is absent on both paths.
  for (RrpcKv* r : {rrpc.get(), inline_only.get()}) {
    auto missing = r->Get("no-such-key");
    ASSERT_TRUE(missing.ok()) << missing.status().ToString();
    EXPECT_FALSE(missing->has_value());
  }
}

TEST_F(Rrpc, ACachedAddressServesTheNextGetWithoutAnRpc) {
  const std::string key = "cached";
  const std::string payload = Payload(key, 2048, 0);
  PutObject(key, payload, 1);
  auto rrpc = Reader(512, /*cache=*/true);
  ASSERT_NE(rrpc, nullptr);
  for (int i = 0; i < 3; ++i) {
    auto v = rrpc->Get(key);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(v->has_value());
    EXPECT_EQ(**v, payload);
  }
  EXPECT_EQ(rrpc->counters().rpcs, 1u);
  EXPECT_EQ(rrpc->counters().address_replies, 1u);
  EXPECT_EQ(rrpc->counters().cached_reads, 2u);
}

TEST_F(Rrpc, AStaleCachedAddressIsRefusedAndRefetched) {
  for (size_t bytes : {size_t{100}, size_t{3000}}) {  // cached after an inline and after an address reply
    const std::string key = fmt::format("moving-{}", bytes);
    const uint64_t old_object = PutObject(key, Payload(key, bytes, 0), 0);
    auto rrpc = Reader(512, /*cache=*/true);
    ASSERT_NE(rrpc, nullptr);
    ASSERT_TRUE(rrpc->Get(key).ok());
    ASSERT_EQ(rrpc->cached(), 1u);

    // The object moves to the other node with new bytes; the old one is retired.
    const std::string moved = Payload(key, bytes, 1);
    PutObject(key, moved, 1);
    ASSERT_TRUE(RrpcRetireObject(writer_.get(), old_object).ok());
    auto v = rrpc->Get(key);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(v->has_value());
    EXPECT_EQ(**v, moved) << bytes;
    EXPECT_EQ(rrpc->counters().stale_refused, 1u) << bytes;
    EXPECT_EQ(rrpc->counters().rpcs, 2u) << bytes;

  }
}

TEST_F(Rrpc, AnAddressReusedByAnotherKeyIsRefused) {
  const std::string key = "reused";
  const std::string payload = Payload(key, 1500, 0);
  const uint64_t object = PutObject(key, payload, 0);
  auto rrpc = Reader(512, /*cache=*/true);
  ASSERT_NE(rrpc, nullptr);
  ASSERT_TRUE(rrpc->Get(key).ok());
  // Another key's object of the same length is written over the memory; the
  // key itself now names a fresh object elsewhere.
  const std::string fresh = Payload(key, 1500, 2);
  PutObject(key, fresh, 1);
  const std::vector<uint8_t> foreign = RrpcObjectImage("intruder", std::string(1500, 'z'));
  ASSERT_TRUE(writer_->Write(object, foreign.data(), foreign.size()).ok());
  auto v = rrpc->Get(key);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_TRUE(v->has_value());
  EXPECT_EQ(**v, fresh);
  EXPECT_EQ(rrpc->counters().stale_refused, 1u);
}

TEST_F(Rrpc, InvalidateAllSendsTheNextGetsByRpc) {
  PutObject("a", Payload("a", 900, 0), 0);
  auto rrpc = Reader(512, /*cache=*/true);
  ASSERT_NE(rrpc, nullptr);
  ASSERT_TRUE(rrpc->Get("a").ok());
  rrpc->InvalidateAll();
  EXPECT_EQ(rrpc->cached(), 0u);
  ASSERT_TRUE(rrpc->Get("a").ok());
  EXPECT_EQ(rrpc->counters().rpcs, 2u);
  EXPECT_EQ(rrpc->counters().cached_reads, 0u);
}

// Items (values_are_objects = false): the store's own 64-byte items, each
// GET against std::unordered_map; the second GET of a key is one read of
// the item, and an update in place is seen through the cached address.
TEST_F(Rrpc, ItemsMatchTheReferenceAndCachedReadsSeeUpdates) {
  kv::StoreOptions so;
  so.expected_items = 1000;
  auto created = kv::Store::Create(writer_.get(), so);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  kv::Store& store = **created;
  RrpcOptions o;
  o.values_are_objects = false;
  auto made = RrpcKv::Create(rpc_.get(), &store, o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  RrpcKv& rrpc = **made;
  std::unordered_map<std::string, std::string> reference;
  for (int i = 0; i < 200; ++i) {
    const std::string key = fmt::format("item-{}", i);
    reference[key] = Payload(key, 40, 0);
    ASSERT_TRUE(store.Put(key, reference[key]).ok());
  }
  for (int round = 0; round < 2; ++round)
    for (const auto& [key, value] : reference) {
      auto v = rrpc.Get(key);
      ASSERT_TRUE(v.ok()) << key << ": " << v.status().ToString();
      ASSERT_TRUE(v->has_value()) << key;
      EXPECT_EQ(**v, value) << key;
    }
  EXPECT_EQ(rrpc.counters().rpcs, reference.size());
  EXPECT_EQ(rrpc.counters().cached_reads, reference.size());
  for (auto& [key, value] : reference) {
    value = Payload(key, 40, 1);
    ASSERT_TRUE(store.Put(key, value).ok());
    auto v = rrpc.Get(key);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(v->has_value());
    EXPECT_EQ(**v, value) << key;
  }
  EXPECT_EQ(rrpc.counters().stale_refused, 0u);
  // A delete, with the Invalidate the contract asks for: absent.
  ASSERT_TRUE(store.Delete("item-7").ok());
  rrpc.Invalidate("item-7");
  auto gone = rrpc.Get("item-7");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_FALSE(gone->has_value());
  auto missing = rrpc.Get("never-put");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

}  // namespace
}  // namespace pulse::ds::testing
