// The memory node's session table: which connections keep a session alive,
// when one without connections expires, tenant scoping, and what each way
// of ending returns to reclaim.  Time is passed in: no waiting.
#include <gtest/gtest.h>

#include <algorithm>

#include "memnode/sessions.h"

namespace pulse::memnode {
namespace {

using namespace std::chrono_literals;
using Clock = SessionTable::Clock;

std::vector<uint64_t> Sorted(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(Sessions, ExpireOnlyAfterTheLastConnectionAndTheGrace) {
  SessionTable t(100ms, 1s);
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(t.Bind(7, 1, /*ep=*/10).ok());
  ASSERT_TRUE(t.Bind(7, 1, /*ep=*/11).ok());  // a second connection (a reconnect)
  t.AddAllocation(7, 0);
  t.AddAllocation(7, 65536);
  EXPECT_FALSE(t.NextExpiry().has_value());
  t.Detach(10, t0);
  EXPECT_FALSE(t.NextExpiry().has_value()) << "one connection is left";
  t.Detach(11, t0);
  ASSERT_TRUE(t.NextExpiry().has_value());
  EXPECT_EQ(*t.NextExpiry(), t0 + 100ms);
  EXPECT_TRUE(t.TakeExpired(t0 + 99ms).empty());
  // Binding again within the grace keeps it.
  ASSERT_TRUE(t.Bind(7, 1, 12).ok());
  EXPECT_FALSE(t.NextExpiry().has_value());
  EXPECT_TRUE(t.TakeExpired(t0 + 1s).empty());
  t.Detach(12, t0 + 1s);
  EXPECT_EQ(Sorted(t.TakeExpired(t0 + 1100ms)), (std::vector<uint64_t>{0, 65536}));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.expired(), 1u);
}

TEST(Sessions, AreScopedByTenant) {
  SessionTable t(100ms, 1s);
  ASSERT_TRUE(t.Bind(7, 1, 10).ok());
  t.AddAllocation(7, 0);
  EXPECT_EQ(t.Bind(7, 2, 11).code(), Status::Code::kPermissionDenied);
  EXPECT_EQ(t.Take(7, 2).status().code(), Status::Code::kPermissionDenied);
  EXPECT_EQ(t.Take(8, 1).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(t.Bind(0, 1, 10).code(), Status::Code::kInvalidArgument);
  auto taken = t.Take(7, 1);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, std::vector<uint64_t>{0});
}

TEST(Sessions, ConnectionSessionsEndWithTheirConnection) {
  SessionTable t(100ms, 1s);
  const Clock::time_point t0 = Clock::now();
  const uint64_t a = t.ConnectionSession(10, 1);
  EXPECT_NE(a, 0u);
  EXPECT_EQ(t.ConnectionSession(10, 1), a);
  const uint64_t b = t.ConnectionSession(11, 1);
  EXPECT_NE(a, b);
  t.AddAllocation(a, 0);
  t.Detach(10, t0);
  t.Detach(11, t0);  // b owns nothing: gone at once
  EXPECT_EQ(t.TakeExpired(t0).size(), 0u);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.TakeExpired(t0 + 100ms), std::vector<uint64_t>{0});
}

TEST(Sessions, RestoredSessionsWaitForTheirClientsThenExpire) {
  SessionTable t(100ms, 1s);
  const Clock::time_point t0 = Clock::now();
  t.Restore(7, 1, t0);
  t.AddAllocation(7, 0);
  t.Restore(9, 2, t0);
  t.AddAllocation(9, 65536);
  ASSERT_TRUE(t.Bind(7, 1, 10).ok());  // its client came back
  EXPECT_TRUE(t.TakeExpired(t0 + 999ms).empty()) << "restored sessions wait the restored grace";
  EXPECT_EQ(t.TakeExpired(t0 + 1s), std::vector<uint64_t>{65536});
  EXPECT_EQ(t.TakeTenant(1), std::vector<uint64_t>{0});
  EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace pulse::memnode
