// The memory node's lock service without the network: shared holds
// coexist, exclusive holds exclude, leases expire, a refused writer keeps
// new readers out, release and renew of a hold that is gone are errors.
#include "memnode/lock_table.h"

#include <gtest/gtest.h>

namespace pulse::memnode {
namespace {

using namespace std::chrono_literals;
using Clock = LockTable::Clock;

TEST(LockTable, SharedCoexistExclusiveExcludes) {
  LockTable t;
  const auto now = Clock::now();
  EXPECT_TRUE(t.TryAcquire(100, 1, false, 1s, now));
  EXPECT_TRUE(t.TryAcquire(100, 2, false, 1s, now));
  EXPECT_FALSE(t.TryAcquire(100, 3, true, 1s, now));
  EXPECT_TRUE(t.TryAcquire(200, 3, true, 1s, now)) << "another address is another lock";
  EXPECT_TRUE(t.Release(100, 1, now).ok());
  EXPECT_TRUE(t.Release(100, 2, now).ok());
  EXPECT_TRUE(t.TryAcquire(100, 3, true, 1s, now));
  EXPECT_FALSE(t.TryAcquire(100, 1, false, 1s, now));
  EXPECT_FALSE(t.TryAcquire(100, 4, true, 1s, now));
  EXPECT_TRUE(t.Release(100, 3, now).ok());
  EXPECT_EQ(t.Release(100, 3, now).code(), Status::Code::kFailedPrecondition);
  EXPECT_TRUE(t.Release(200, 3, now).ok());
  EXPECT_EQ(t.size(), 1u) << "only the waiting writer's intent on 100 is left";
}

TEST(LockTable, LeasesExpire) {
  LockTable t;
  const auto now = Clock::now();
  EXPECT_TRUE(t.TryAcquire(100, 1, true, 100ms, now));
  EXPECT_FALSE(t.TryAcquire(100, 2, true, 1s, now + 99ms));
  EXPECT_TRUE(t.TryAcquire(100, 2, true, 1s, now + 100ms)) << "the dead holder's lease ended";
  EXPECT_EQ(t.expired_leases(), 1u);
  EXPECT_EQ(t.Renew(100, 1, 1s, now + 100ms).code(), Status::Code::kFailedPrecondition);
  EXPECT_TRUE(t.Renew(100, 2, 1s, now + 900ms).ok());
  EXPECT_FALSE(t.TryAcquire(100, 3, false, 1s, now + 1500ms)) << "renewed until 1900 ms";
  EXPECT_TRUE(t.TryAcquire(100, 3, false, 1s, now + 1900ms));
}

TEST(LockTable, AWaitingWriterKeepsNewReadersOut) {
  LockTable t;
  const auto now = Clock::now();
  EXPECT_TRUE(t.TryAcquire(100, 1, false, 1s, now));
  EXPECT_FALSE(t.TryAcquire(100, 9, true, 1s, now));       // the writer waits...
  EXPECT_FALSE(t.TryAcquire(100, 2, false, 1s, now + 1ms));  // ...so a new reader does too
  EXPECT_TRUE(t.TryAcquire(100, 1, false, 1s, now + 1ms)) << "a holder renews";
  EXPECT_TRUE(t.Release(100, 1, now + 2ms).ok());
  EXPECT_TRUE(t.TryAcquire(100, 9, true, 1s, now + 3ms));
  EXPECT_TRUE(t.Release(100, 9, now + 4ms).ok());
  // A writer that gives up stops blocking readers after kWriterIntent.
  EXPECT_TRUE(t.TryAcquire(100, 1, false, 1s, now + 5ms));
  EXPECT_FALSE(t.TryAcquire(100, 9, true, 1s, now + 5ms));
  EXPECT_FALSE(t.TryAcquire(100, 2, false, 1s, now + 6ms));
  EXPECT_TRUE(t.TryAcquire(100, 2, false, 1s, now + 6ms + LockTable::kWriterIntent));
}

TEST(LockTable, ASoleReaderMayUpgrade) {
  LockTable t;
  const auto now = Clock::now();
  EXPECT_TRUE(t.TryAcquire(100, 1, false, 1s, now));
  EXPECT_TRUE(t.TryAcquire(100, 1, true, 1s, now));
  EXPECT_FALSE(t.TryAcquire(100, 2, false, 1s, now));
}

}  // namespace
}  // namespace pulse::memnode
