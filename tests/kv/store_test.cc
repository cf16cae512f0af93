// pulse::kv::Store against std::unordered_map: random GET/PUT/DELETE with a
// fixed seed (single calls and batches), a bucket's overflow chain, and a
// full store that refuses new keys with ResourceExhausted and loses
// nothing.  ctest runs the binary twice: over the default request path
// and with PULSE_REQUEST_PATH=ring (RingPath.kv_test), where the test
// checks the requests did go through the rings.  The rpc baseline's native
// handlers (rpc::KvStoreRunner) run against the same reference.
#include "pulse/kv/store.h"

#include <cstdlib>
#include <random>
#include <string>
#include <unordered_map>

#include "pulse/iterators/kv_get.h"
#include "pulse/rpc.h"
#include "pulse/rpc_kv.h"
#include "pulse/typed_traversal.h"
#include "support/ds_cluster.h"

namespace pulse::kv {
namespace {

using KvStore = ds::testing::DsCluster;

bool RingForced() {
  const char* env = std::getenv("PULSE_REQUEST_PATH");
  return env != nullptr && std::string(env) == "ring";
}

std::string KeyOf(uint64_t k) { return "key-" + std::to_string(k); }
std::string ValueOf(std::mt19937_64& rng) {
  std::string v(rng() % 41, '\0');  // 0..40 bytes, any byte
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

// Every key of the reference, read back in one batch: the same values.
void ExpectSameContents(Store& store, const std::unordered_map<std::string, std::string>& native,
                        uint64_t key_space) {
  std::vector<std::string> keys;
  for (uint64_t k = 0; k < key_space; ++k) keys.push_back(KeyOf(k));
  auto got = store.GetBatch(keys);
  ASSERT_EQ(got.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    auto it = native.find(keys[i]);
    ASSERT_EQ(got[i]->has_value(), it != native.end()) << keys[i];
    if (it != native.end()) {
      EXPECT_EQ(**got[i], it->second) << keys[i];
    }
  }
  EXPECT_EQ(store.size(), native.size());
}

// Random GET/PUT/DELETE (seed 15) on a store with overflow chains, each
// checked against std::unordered_map, then the contents and the accesses.
void RandomOperationsMatchTheReference(Store& store) {
  std::unordered_map<std::string, std::string> native;
  std::mt19937_64 rng(15);
  constexpr uint64_t kKeys = 600;
  int hits = 0;
  for (uint64_t op = 0; op < ds::testing::ScaledOps(3000); ++op) {
    const std::string key = KeyOf(rng() % kKeys);
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 4) {
      const std::string value = ValueOf(rng);
      ASSERT_TRUE(store.Put(key, value).ok()) << "put " << key;
      native[key] = value;
    } else if (kind < 6) {
      auto r = store.Delete(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.erase(key) == 1) << "delete " << key;
    } else {
      auto r = store.Get(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      auto it = native.find(key);
      ASSERT_EQ(r->has_value(), it != native.end()) << "get " << key;
      if (it != native.end()) {
        EXPECT_EQ(**r, it->second) << "get " << key;
        ++hits;
      }
    }
    ASSERT_EQ(store.size(), native.size());
  }
  EXPECT_GT(hits, static_cast<int>(ds::testing::ScaledOps(3000) / 30));  // about a fifth of the ops are GET hits
  EXPECT_GT(store.stats().overflow_buckets, 0u) << "the test should reach overflow buckets";
  ExpectSameContents(store, native, kKeys);
  // A GET is two accesses without collisions (bucket, item), a few more in
  // overflow chains; a PUT three (bucket, item, slot) or so.
  EXPECT_GE(store.stats().accesses_per_get(), 1.0);
  EXPECT_LE(store.stats().accesses_per_get(), 6.0);
  EXPECT_GE(store.stats().accesses_per_put(), 2.0);
  EXPECT_LE(store.stats().accesses_per_put(), 8.0);
}

StoreOptions SmallStoreOptions() {
  StoreOptions options;
  options.buckets = 16;  // 128 slots per partition for ~300 keys: overflow chains
  options.slab_items = 64;
  return options;
}

TEST_F(KvStore, RandomOperationsMatchStdUnorderedMap) {
  auto created = Store::Create(client_.get(), SmallStoreOptions());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  RandomOperationsMatchTheReference(**created);
  if (RingForced()) {
    EXPECT_GT(client_->counters().ring_requests, 0u);
    // A 64-byte-item request fits a slot; only the re-send that carries a
    // program's code to a node that does not know it yet (once per
    // program and node) is too large for one and goes by message.
    EXPECT_LE(client_->counters().ring_fallbacks, 3u * client_->memory_nodes());
    // Double-layer rings take entries as long as their data area
    // (ring_slots x ring_slot_bytes, 512 KiB by default): the code-carrying re-sends ride them too.
    const char* layout = std::getenv("PULSE_RING_LAYOUT");
    if (layout != nullptr && std::string(layout) == "double") EXPECT_EQ(client_->counters().ring_fallbacks, 0u);
  }
}

// The rpc baseline (`pulse bench kv --system rpc`): the same store with its
// GET, PUT and DELETE run by the memory nodes' native handlers
// (rpc::KvStoreRunner), against the same reference; no traversal is sent.
TEST_F(KvStore, RpcHandlersMatchStdUnorderedMap) {
  auto created = Store::Create(client_.get(), SmallStoreOptions());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  RpcOptions ro;
  ro.max_attempts = 1;  // the handlers write (pulse/rpc_kv.h)
  ro.request_timeout = std::chrono::seconds(30);
  auto rpc = RpcClient::Create(client_.get(), ro);
  ASSERT_TRUE(rpc.ok()) << rpc.status().ToString();
  (*created)->SetRunner(rpc::KvStoreRunner(rpc->get()));
  const uint64_t traversals = client_->counters().traversals;
  RandomOperationsMatchTheReference(**created);
  EXPECT_EQ(client_->counters().traversals, traversals) << "every operation should have gone by rpc";
}

TEST_F(KvStore, BatchesMatchStdUnorderedMapAndKeepBatchOrderPerKey) {
  StoreOptions options;
  options.buckets = 8;
  options.max_in_flight = 32;
  auto created = Store::Create(client_.get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Store& store = **created;
  std::unordered_map<std::string, std::string> native;
  std::mt19937_64 rng(16);
  constexpr uint64_t kKeys = 300;
  for (int round = 0; round < 12; ++round) {
    std::vector<std::pair<std::string, std::string>> puts;
    for (int i = 0; i < 100; ++i) puts.emplace_back(KeyOf(rng() % kKeys), ValueOf(rng));
    auto put = store.PutBatch(puts);
    ASSERT_EQ(put.size(), puts.size());
    for (size_t i = 0; i < puts.size(); ++i) {
      ASSERT_TRUE(put[i].ok()) << put[i].ToString();
      native[puts[i].first] = puts[i].second;  // the last write of a key wins
    }
    std::vector<std::string> dels;
    for (int i = 0; i < 30; ++i) dels.push_back(KeyOf(rng() % kKeys));
    auto del = store.DeleteBatch(dels);
    for (size_t i = 0; i < dels.size(); ++i) {
      ASSERT_TRUE(del[i].ok()) << del[i].status().ToString();
      EXPECT_EQ(*del[i], native.erase(dels[i]) == 1) << "delete " << dels[i];
    }
    ExpectSameContents(store, native, kKeys);
  }
  EXPECT_GT(store.stats().overflow_buckets, 0u);
}

TEST_F(KvStore, FullStoreRefusesNewKeysAndLosesNothing) {
  StoreOptions options;
  options.buckets = 4;
  options.partitions = 1;
  options.slab_items = 16;
  options.max_items = 40;
  auto created = Store::Create(client_.get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Store& store = **created;
  std::unordered_map<std::string, std::string> native;
  for (uint64_t k = 0; k < 40; ++k) {
    ASSERT_TRUE(store.Put(KeyOf(k), fmt::format("v{}", k)).ok()) << k;
    native[KeyOf(k)] = fmt::format("v{}", k);
  }
  Status full = store.Put(KeyOf(40), "one too many");
  EXPECT_EQ(full.code(), Status::Code::kResourceExhausted) << full.ToString();
  EXPECT_NE(full.message().find("max_items 40"), std::string::npos) << full.ToString();
  // A batch with new keys and updates: the updates succeed, the new keys
  // fail alone.
  std::vector<std::pair<std::string, std::string>> mixed = {
      {KeyOf(41), "x"}, {KeyOf(3), "three"}, {KeyOf(42), "y"}, {KeyOf(7), "seven"}};
  auto r = store.PutBatch(mixed);
  EXPECT_EQ(r[0].code(), Status::Code::kResourceExhausted);
  EXPECT_TRUE(r[1].ok()) << r[1].ToString();
  EXPECT_EQ(r[2].code(), Status::Code::kResourceExhausted);
  EXPECT_TRUE(r[3].ok()) << r[3].ToString();
  native[KeyOf(3)] = "three";
  native[KeyOf(7)] = "seven";
  ExpectSameContents(store, native, 50);
  // Deleting frees an item for a new key.
  auto d = store.Delete(KeyOf(0));
  ASSERT_TRUE(d.ok() && *d);
  native.erase(KeyOf(0));
  ASSERT_TRUE(store.Put(KeyOf(40), "fits now").ok());
  native[KeyOf(40)] = "fits now";
  ExpectSameContents(store, native, 50);
}

TEST_F(KvStore, RejectsKeysAndValuesLongerThanConfigured) {
  StoreOptions options;
  options.key_bytes = 8;
  options.value_bytes = 8;
  auto created = Store::Create(client_.get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Store& store = **created;
  EXPECT_EQ(store.Put("123456789", "v").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store.Put("k", "123456789").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store.Get("123456789").status().code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(store.Put("12345678", "abcdefgh").ok());
  auto g = store.Get("12345678");
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_EQ(**g, "abcdefgh");
  // Keys that differ only by trailing zero bytes are different keys.
  ASSERT_TRUE(store.Put(std::string("ab\0", 3), "with").ok());
  ASSERT_TRUE(store.Put("ab", "without").ok());
  EXPECT_EQ(**store.Get(std::string("ab\0", 3)), "with");
  EXPECT_EQ(**store.Get("ab"), "without");
  StoreOptions too_big;
  too_big.value_bytes = 200;
  EXPECT_EQ(Store::Create(client_.get(), too_big).status().code(), Status::Code::kInvalidArgument);
}

// Tenant rules as everywhere: another tenant's GET program started at this
// store's bucket faults with a protection error (on the ring path too: the
// ring's requests act for the connection's proven tenant), and its
// one-sided reads of the bucket are refused.
TEST_F(KvStore, AnotherTenantReachesNothingOfTheStore) {
  auto created = Store::Create(client_.get(), StoreOptions{});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Store& store = **created;
  ASSERT_TRUE(store.Put("secret", "tenant one's value").ok());
  auto request = store.MakeGetRequest("secret");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  // Tenant 1 itself reads it through the same request.
  auto program = EmbeddedProgram<iterators::kv_get>("kv_get");
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  auto own = client_->Traverse(*program, request->start, request->state, offload);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  ASSERT_EQ(own->status, TraversalStatus::kDone);
  auto value = store.GetAnswer(own->scratch);
  ASSERT_TRUE(value.ok() && value->has_value());
  EXPECT_EQ(**value, "tenant one's value");

  ClientOptions other_options = RackClientOptions();
  other_options.tenant = 2;
  std::unique_ptr<Client> other = ConnectClient(other_options);
  ASSERT_NE(other, nullptr);
  // Twice: the first request may carry the program's code (too large for
  // a ring slot), the second is a plain request.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto theirs = other->Traverse(*program, request->start, request->state, offload);
    if (theirs.ok()) {
      EXPECT_EQ(theirs->status, TraversalStatus::kFaultProtection);
      auto leaked = store.GetAnswer(theirs->scratch);
      EXPECT_FALSE(leaked.ok() && leaked->has_value()) << "tenant 2 read tenant 1's value";
    } else {
      EXPECT_EQ(theirs.status().code(), Status::Code::kPermissionDenied) << theirs.status().ToString();
    }
  }
  std::vector<uint8_t> bucket(128);
  EXPECT_EQ(other->Read(request->start, bucket.data(), bucket.size()).code(), Status::Code::kPermissionDenied);
  if (RingForced()) {
    EXPECT_GT(other->counters().ring_requests, 0u) << other->counters().ring_fallbacks << " fell back";
  }
}

}  // namespace
}  // namespace pulse::kv
