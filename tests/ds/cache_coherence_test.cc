// Coherence of the CPU-node cache (ClientOptions::cache) across clients, for
// each granularity (object, page) and write policy (write-back,
// write-through): cached readers and a cached writer under one FarLock
// (include/pulse/ds/lock.h: acquiring drops the cache, releasing writes it
// back) against a shadow of what was written; the writer's own cached reads
// around offloaded and CPU-node STOREs; and writers of different cells of
// one cache block under different locks.  The cells are packed 8 bytes
// apart, so every block holds several of them.
#include <cstring>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "support/ds_cluster.h"
#include "ds/ops_tally.h"
#include "pulse/assembler.h"
#include "pulse/ds/lock.h"
#include "pulse/program.h"

namespace pulse::ds::testing {
namespace {

using namespace std::chrono_literals;

// Sets the u64 at cur_ptr to sp[0].
constexpr const char* kSetOne = "LOAD data, 8\nMOVE r1, cur_ptr\nSTORE [r1], sp[0]\nRETURN";
// Returns the u64 at cur_ptr in sp[0].
constexpr const char* kReadOne = "LOAD data, 8\nMOVE sp[0], data[0]\nRETURN";

ProgramRef Build(const char* text) {
  auto insns = Assemble(text);
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  auto p = VerifiedProgram::Create(std::move(*insns));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

std::vector<uint8_t> Scratch(uint64_t v) {
  std::vector<uint8_t> s(8);
  std::memcpy(s.data(), &v, 8);
  return s;
}

uint64_t Sp0(const TraversalResult& r) {
  uint64_t v = 0;
  if (r.scratch.size() >= 8) std::memcpy(&v, r.scratch.data(), 8);
  return v;
}

struct CoherenceCase {
  std::string name;
  CacheOptions cache;
};
// Names the case in failure messages (found by argument-dependent lookup).
void PrintTo(const CoherenceCase& c, std::ostream* os) { *os << c.name; }

class DsCacheCoherence : public DsCluster, public ::testing::WithParamInterface<CoherenceCase> {
 protected:
  std::unique_ptr<Client> Connect() {
    ClientOptions options = RackClientOptions();
    options.cache = GetParam().cache;
    return ConnectClient(options);
  }
  // The value of `cell` by `c`'s one-sided read (through its cache).
  uint64_t ReadCell(Client* c, uint64_t cell) {
    uint64_t v = 0;
    Status s = c->Read(cell, &v, 8);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return v;
  }
  // Sets `cell` by a traversal run as `mode` says.
  void StoreByTraversal(Client* c, uint64_t cell, uint64_t v, ExecutionMode mode) {
    TraverseOptions o;
    o.mode = mode;
    auto r = c->Traverse(set_, cell, Scratch(v), o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  }
  uint64_t ReadByTraversal(Client* c, uint64_t cell, ExecutionMode mode) {
    TraverseOptions o;
    o.mode = mode;
    auto r = c->Traverse(read_, cell, Scratch(0), o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return ~uint64_t{0};
    EXPECT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status) << " at " << r->fault_addr;
    return Sp0(*r);
  }

  const ProgramRef set_ = Build(kSetOne);
  const ProgramRef read_ = Build(kReadOne);
};

// One writer and two readers, each a cached Client, interleaved at random
// on one thread (each holds the lock in turn).  Under the lock every read --
// one-sided, or by an offloaded traversal (which runs here while its
// windows are cached) -- must return the shadow's value; between holds the readers also read without the lock,
// filling their caches with values the writer then changes.
TEST_P(DsCacheCoherence, CachedReadersAndAWriterUnderFarLockSeeEveryPublishedWrite) {
  std::unique_ptr<Client> writer = Connect(), reader1 = Connect(), reader2 = Connect();
  ASSERT_TRUE(writer && reader1 && reader2);
  Client* readers[] = {reader1.get(), reader2.get()};
  auto wlock = FarLock::Create(writer.get());
  ASSERT_TRUE(wlock.ok()) << wlock.status().ToString();
  std::unique_ptr<FarLock> rlocks[] = {FarLock::Attach(reader1.get(), (*wlock)->address()),
                                       FarLock::Attach(reader2.get(), (*wlock)->address())};

  // 96 cells, 8 bytes each, packed in the writer's slabs (both nodes): the
  // writer may run its STOREs here too (a CPU node runs traversals only over
  // memory it allocated; the readers' traversals over it are offloaded).
  std::vector<uint64_t> cells;
  std::map<uint64_t, uint64_t> shadow;
  for (int i = 0; i < 96; ++i) {
    auto a = writer->Allocate(8);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    const uint64_t v = 1000 + i;
    ASSERT_TRUE(writer->Write(*a, &v, 8).ok());
    cells.push_back(*a);
    shadow[*a] = v;
  }
  ASSERT_TRUE(writer->FlushCache().ok());
  std::mt19937_64 rng(0xc0);
  auto any_cell = [&] { return cells[rng() % cells.size()]; };
  const ExecutionMode modes[] = {ExecutionMode::kOffload, ExecutionMode::kCpuNode};
  uint64_t checked = 0, stores = 0;
  const uint64_t rounds = ScaledOps(400);
  for (uint64_t round = 0; round < rounds; ++round) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 4) {  // the writer: a few writes, one-sided or by STORE
      auto guard = FarLockGuard::Exclusive(**wlock, 20s);
      ASSERT_TRUE(guard.ok()) << guard.status().ToString();
      for (int k = 0; k < 4; ++k) {
        const uint64_t cell = any_cell(), v = rng();
        const int how = static_cast<int>(rng() % 3);
        if (how == 0) {
          ASSERT_TRUE(writer->Write(cell, &v, 8).ok());
        } else {
          StoreByTraversal(writer.get(), cell, v, modes[how - 1]);
          ++stores;
        }
        shadow[cell] = v;
        // Its own next read sees it, wherever it comes from.
        const uint64_t probe = any_cell();
        ASSERT_EQ(ReadCell(writer.get(), probe), shadow[probe]) << "writer, round " << round;
      }
      ASSERT_TRUE(guard->Release().ok());
    } else if (what < 9) {  // a reader under a shared hold
      const int r = static_cast<int>(rng() % 2);
      auto guard = FarLockGuard::Shared(*rlocks[r], 20s);
      ASSERT_TRUE(guard.ok()) << guard.status().ToString();
      for (int k = 0; k < 6; ++k) {
        const uint64_t cell = any_cell();
        const uint64_t got = k % 3 == 2 ? ReadByTraversal(readers[r], cell, ExecutionMode::kOffload)
                                        : ReadCell(readers[r], cell);
        ASSERT_EQ(got, shadow[cell]) << "reader " << r << ", round " << round << ", cell " << cell
                                     << (k % 3 == 2 ? " by traversal" : " by one-sided read");
        ++checked;
      }
      ASSERT_TRUE(guard->Release().ok());
    } else {  // a reader warms its cache outside the lock (values may be stale later)
      for (int k = 0; k < 8; ++k) (void)ReadCell(readers[rng() % 2], any_cell());
    }
  }
  EXPECT_GT(checked, rounds);
  EXPECT_GT(stores, 0u);
  EXPECT_GT(reader1->counters().cache_hits + reader2->counters().cache_hits, 0u) << "the readers' caches were used";
  // And far memory holds the shadow, read by a client without a cache.
  for (uint64_t cell : cells) ASSERT_EQ(ReadCell(client_.get(), cell), shadow[cell]);
  TallyOps("cache coherence", rounds);
}

// Within one hold: a cached read, then a STORE to the same cell by a
// traversal (offloaded, or run here over the cache), then reads that must
// see it -- of that cell and of a neighbour in the same block written
// (perhaps still dirty) just before.
TEST_P(DsCacheCoherence, AReadAfterAStoreByTraversalSeesIt) {
  std::unique_ptr<Client> c = Connect();
  ASSERT_NE(c, nullptr);
  auto base = c->Allocate(64);
  ASSERT_TRUE(base.ok());
  const uint64_t cell = *base, neighbour = *base + 8;
  uint64_t v = 1, n = 0;
  for (ExecutionMode mode : {ExecutionMode::kOffload, ExecutionMode::kCpuNode}) {
    for (int i = 0; i < 4; ++i) {
      (void)ReadCell(c.get(), cell);  // cached now
      n = v * 100;
      ASSERT_TRUE(c->Write(neighbour, &n, 8).ok());
      StoreByTraversal(c.get(), cell, ++v, mode);
      EXPECT_EQ(ReadCell(c.get(), cell), v) << "mode " << static_cast<int>(mode);
      EXPECT_EQ(ReadCell(c.get(), neighbour), n) << "mode " << static_cast<int>(mode);
      // An offloaded traversal sees both (dirty blocks go first).
      EXPECT_EQ(ReadByTraversal(c.get(), cell, ExecutionMode::kOffload), v);
      EXPECT_EQ(ReadByTraversal(c.get(), neighbour, ExecutionMode::kOffload), n);
    }
  }
  ASSERT_TRUE(c->FlushCache().ok());
  EXPECT_EQ(ReadCell(client_.get(), cell), v) << "far memory";
  EXPECT_EQ(ReadCell(client_.get(), neighbour), n) << "far memory";
}

// Two cells of one cache block, each under its own lock, written by two
// cached clients whose holds overlap: neither write may be lost when the
// other client writes its cache back.
TEST_P(DsCacheCoherence, WritersOfOneBlockUnderDifferentLocksLoseNothing) {
  std::unique_ptr<Client> c1 = Connect(), c2 = Connect();
  ASSERT_TRUE(c1 && c2);
  auto base = client_->Allocate(16);
  ASSERT_TRUE(base.ok());
  const uint64_t a = *base, b = *base + 8;
  const uint64_t zero = 0;
  ASSERT_TRUE(client_->Write(a, &zero, 8).ok());
  ASSERT_TRUE(client_->Write(b, &zero, 8).ok());
  auto la = FarLock::Create(c1.get());
  auto lb = FarLock::Create(c2.get());
  ASSERT_TRUE(la.ok() && lb.ok());
  for (uint64_t round = 1; round <= 8; ++round) {
    auto ga = FarLockGuard::Exclusive(**la, 20s);
    ASSERT_TRUE(ga.ok());
    auto gb = FarLockGuard::Exclusive(**lb, 20s);
    ASSERT_TRUE(gb.ok());
    // Alternate who writes (and writes back) first.
    Client* first = round % 2 ? c1.get() : c2.get();
    Client* second = round % 2 ? c2.get() : c1.get();
    const uint64_t first_cell = round % 2 ? a : b, second_cell = round % 2 ? b : a;
    ASSERT_TRUE(first->Write(first_cell, &round, 8).ok());
    ASSERT_TRUE(second->Write(second_cell, &round, 8).ok());
    ASSERT_TRUE((round % 2 ? gb : ga)->Release().ok());  // the second writer's lock
    ASSERT_TRUE((round % 2 ? ga : gb)->Release().ok());
    EXPECT_EQ(ReadCell(client_.get(), a), round) << "round " << round << ": a lost";
    EXPECT_EQ(ReadCell(client_.get(), b), round) << "round " << round << ": b lost";
  }
}

CacheOptions Make(CacheGranularity g, CacheWritePolicy w) {
  CacheOptions c;
  c.bytes = 8 << 10;  // smaller than the cells' blocks: evictions too
  c.granularity = g;
  c.write = w;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Policies, DsCacheCoherence,
    ::testing::Values(CoherenceCase{"object_writeback", Make(CacheGranularity::kObject, CacheWritePolicy::kWriteBack)},
                      CoherenceCase{"object_writethrough",
                                    Make(CacheGranularity::kObject, CacheWritePolicy::kWriteThrough)},
                      CoherenceCase{"page_writeback", Make(CacheGranularity::kPage, CacheWritePolicy::kWriteBack)},
                      CoherenceCase{"page_writethrough", Make(CacheGranularity::kPage, CacheWritePolicy::kWriteThrough)}),
    [](const ::testing::TestParamInfo<CoherenceCase>& info) { return info.param.name; });

}  // namespace
}  // namespace pulse::ds::testing
