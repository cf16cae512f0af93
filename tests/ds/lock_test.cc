// FarLock across CPU nodes: readers (threads, each with its own Client) look
// up a B+tree under shared holds while a writer changes it under exclusive
// holds in multi-step updates that are inconsistent midway; leases of a
// holder that dies expire; acquisitions time out with an error.
#include "pulse/ds/lock.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "support/ds_cluster.h"
#include "ds/ops_tally.h"
#include "pulse/ds/btree.h"

namespace pulse::ds::testing {
namespace {

using namespace std::chrono_literals;

class DsLock : public DsCluster {
 protected:
  std::unique_ptr<Client> Connect() { return ConnectClient(RackClientOptions()); }
};

// The writer moves key k to k + kUniverse (erase one, insert the other,
// then bump the version word): between the steps the tree holds neither or
// both, and the version is stale.  Readers check every lookup, the size and
// the version against the writer's snapshot of that version.
TEST_F(DsLock, ReadersUnderSharedHoldsSeeWriterPublishedVersions) {
  constexpr uint64_t kUniverse = 64;
  auto tree = BTree::Create(client_.get());
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  auto lock = FarLock::Create(client_.get());
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  auto version_word = client_->Allocate(8);
  ASSERT_TRUE(version_word.ok());
  std::set<uint64_t> shadow;
  for (uint64_t k = 0; k < kUniverse; ++k) {
    ASSERT_TRUE((*tree)->Insert(k, k * 3).ok());
    shadow.insert(k);
  }
  uint64_t version = 0;
  ASSERT_TRUE(client_->Write(*version_word, &version, 8).ok());

  std::mutex mu;
  std::map<uint64_t, std::set<uint64_t>> published{{0, shadow}};
  std::atomic<bool> writer_done{false};
  std::atomic<uint64_t> reader_ops{0}, reader_holds{0};
  const uint64_t header = (*tree)->header_address(), lock_addr = (*lock)->address();

  auto reader = [&](int id) {
    std::unique_ptr<Client> c = Connect();
    ASSERT_NE(c, nullptr);
    auto t = BTree::Open(c.get(), header, {.mode = ExecutionMode::kOffload});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto l = FarLock::Attach(c.get(), lock_addr);
    std::mt19937_64 rng(100 + id);
    while (!writer_done.load()) {
      auto guard = FarLockGuard::Shared(*l, 20s);
      ASSERT_TRUE(guard.ok()) << guard.status().ToString();
      ++reader_holds;
      ASSERT_TRUE((*t)->Refresh().ok());
      uint64_t v = 0;
      ASSERT_TRUE(c->Read(*version_word, &v, 8).ok());
      std::set<uint64_t> want;
      {
        std::lock_guard<std::mutex> g(mu);
        ASSERT_TRUE(published.count(v)) << "version " << v << " was never published";
        want = published[v];
      }
      ASSERT_EQ((*t)->size(), want.size()) << "version " << v;
      for (int i = 0; i < 8; ++i) {
        const uint64_t key = rng() % (2 * kUniverse + 8);
        auto f = (*t)->Find(key);
        ASSERT_TRUE(f.ok()) << f.status().ToString();
        ASSERT_EQ(f->has_value(), want.count(key) > 0) << "key " << key << " at version " << v;
        if (f->has_value()) EXPECT_EQ(**f, key * 3);
        ++reader_ops;
      }
    }
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) readers.emplace_back(reader, i);

  std::mt19937_64 rng(7);
  // At least min_steps updates, and on until the readers have held the lock
  // (they connect slowly under sanitizers); bounded by a deadline.
  const uint64_t min_steps = ScaledOps(150);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  uint64_t steps = 0;
  for (; steps < min_steps || (reader_holds.load() < 3 && std::chrono::steady_clock::now() < deadline);
       ++steps) {
    auto guard = FarLockGuard::Exclusive(**lock, 20s);
    ASSERT_TRUE(guard.ok()) << guard.status().ToString();
    auto it = shadow.begin();
    std::advance(it, rng() % shadow.size());
    const uint64_t out = *it, in = out < kUniverse ? out + kUniverse : out - kUniverse;
    auto e = (*tree)->Erase(out);
    ASSERT_TRUE(e.ok() && *e) << "erase " << out;
    std::this_thread::yield();  // widen the inconsistent window
    auto i = (*tree)->Insert(in, in * 3);
    ASSERT_TRUE(i.ok() && *i) << "insert " << in;
    shadow.erase(out);
    shadow.insert(in);
    ++version;
    {
      std::lock_guard<std::mutex> g(mu);
      published[version] = shadow;
    }
    ASSERT_TRUE(client_->Write(*version_word, &version, 8).ok());
  }
  writer_done = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(reader_holds.load(), 0u);
  ASSERT_TRUE((*tree)->Validate().ok());
  TallyOps("lock readers+writer", reader_ops.load() + 2 * steps);
}

TEST_F(DsLock, SharedHoldsCoexistAndExcludeWriters) {
  auto a = FarLock::Create(client_.get(), {.lease = 10s});
  ASSERT_TRUE(a.ok());
  std::unique_ptr<Client> other = Connect();
  ASSERT_NE(other, nullptr);
  auto b = FarLock::Attach(other.get(), (*a)->address(), {.lease = 10s});
  auto c = FarLock::Attach(client_.get(), (*a)->address(), {.lease = 10s});
  ASSERT_TRUE((*a)->LockShared(1s).ok());
  ASSERT_TRUE(b->LockShared(1s).ok());
  Status s = c->LockExclusive(100ms);
  EXPECT_EQ(s.code(), Status::Code::kTimeout) << s.ToString();
  EXPECT_FALSE((*a)->LockShared(1s).ok()) << "a FarLock holds at most once";
  ASSERT_TRUE((*a)->Unlock().ok());
  ASSERT_TRUE(b->Unlock().ok());
  ASSERT_TRUE(c->LockExclusive(1s).ok());
  s = b->LockShared(100ms);
  EXPECT_EQ(s.code(), Status::Code::kTimeout) << s.ToString();
  EXPECT_TRUE(c->Renew().ok());
  ASSERT_TRUE(c->Unlock().ok());
  EXPECT_FALSE(c->Unlock().ok());
  // A lock must name this tenant's memory.
  auto bogus = FarLock::Attach(client_.get(), 12345);
  EXPECT_EQ(bogus->LockShared(100ms).code(), Status::Code::kInvalidArgument);
}

// The memory node's lock service and allocator answer over the control
// path; each error arrives at the Client with the code the node chose.
TEST_F(DsLock, ControlErrorsArriveWithTheirCodes) {
  auto mine = client_->Allocate(64);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  Status s = client_->Unlock(*mine, 77);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
  s = client_->RenewLock(*mine, 77, 1s);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
  auto granted = client_->TryLock(*mine, 77, true, 0ms);
  EXPECT_EQ(granted.status().code(), Status::Code::kInvalidArgument) << "lease 0: " << granted.status().ToString();

  // The last word of node 1's pool: inside the node, in no allocation.
  const auto& node1 = rack_.view(1);
  granted = client_->TryLock(node1.base + node1.size - 8, 77, true, 1s);
  EXPECT_EQ(granted.status().code(), Status::Code::kNotFound) << granted.status().ToString();

  ClientOptions other_tenant = RackClientOptions();
  other_tenant.tenant = 2;
  std::unique_ptr<Client> other = ConnectClient(other_tenant);
  ASSERT_NE(other, nullptr);
  granted = other->TryLock(*mine, 78, false, 1s);
  EXPECT_EQ(granted.status().code(), Status::Code::kPermissionDenied) << granted.status().ToString();

  auto huge = client_->Allocate(uint64_t{64} << 20);  // each pool has 16 MiB
  EXPECT_EQ(huge.status().code(), Status::Code::kResourceExhausted) << huge.status().ToString();
}

TEST_F(DsLock, LeaseOfADeadHolderExpires) {
  auto creator = FarLock::Create(client_.get());
  ASSERT_TRUE(creator.ok());
  const uint64_t addr = (*creator)->address();
  // The lease starts when the memory node grants it, after t0: it cannot
  // end before t0 + 400 ms.
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::unique_ptr<Client> doomed = Connect();
    ASSERT_NE(doomed, nullptr);
    auto l = FarLock::Attach(doomed.get(), addr, {.lease = 400ms});
    ASSERT_TRUE(l->LockExclusive(1s).ok());
    l->Forget();  // the CPU node dies holding it
  }
  Status early = (*creator)->LockShared(50ms);
  if (std::chrono::steady_clock::now() - t0 < 400ms) {
    EXPECT_EQ(early.code(), Status::Code::kTimeout) << early.ToString();
  }
  if (!early.ok()) ASSERT_TRUE((*creator)->LockShared(10s).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 400ms) << "granted before the lease could end";
  ASSERT_TRUE((*creator)->Unlock().ok());
  // An expired hold cannot be released or renewed.
  auto late = FarLock::Attach(client_.get(), addr, {.lease = 50ms});
  ASSERT_TRUE(late->LockExclusive(1s).ok());
  std::this_thread::sleep_for(150ms);  // the lease runs out (what is tested)
  EXPECT_EQ(late->Renew().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(late->Unlock().code(), Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace pulse::ds::testing
