// The rack pool's owner page and mapping (src/rack/rack_pool.h): a mapping
// is alive exactly while the thread that claimed the page lives and has not
// closed it; an offer for another object, or for a dead owner, is refused.
// The owner runs in a forked child, killed with SIGKILL as a crashed memory
// node would be.
#include "rack/rack_pool.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace pulse::rack {
namespace {

constexpr uint64_t kBytes = 1 << 16;
const uint64_t kObject = kBytes + TrailerBytes(kBytes);

// A pool object of kBytes data, an owner page and frame gates, mapped here.
class PoolObject {
 public:
  PoolObject() : name_(fmt::format("/pulse-rack-test-{}", getpid())) {
    shm_unlink(name_.c_str());
    int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    EXPECT_EQ(ftruncate(fd, kObject), 0);
    void* p = mmap(nullptr, kObject, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    EXPECT_NE(p, MAP_FAILED);
    base_ = static_cast<uint8_t*>(p);
  }
  ~PoolObject() {
    munmap(base_, kObject);
    shm_unlink(name_.c_str());
  }
  PoolOffer Offer(uint64_t token) const {
    return PoolOffer{.rack = "a", .shm = name_, .bytes = kBytes, .object_bytes = kObject, .owner_offset = kBytes,
                     .token = token};
  }
  uint8_t* page() { return base_ + kBytes; }
  uint8_t* data() { return base_; }

 private:
  std::string name_;
  uint8_t* base_ = nullptr;
};

// Forks a child that claims the page, reports its token through a pipe and
// then waits to be killed.
struct OwnerChild {
  pid_t pid = -1;
  uint64_t token = 0;
};
OwnerChild StartOwner(PoolObject& pool) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  OwnerChild child;
  child.pid = fork();
  if (child.pid == 0) {
    close(fds[0]);
    auto owner = PoolOwner::Claim(pool.page());
    const uint64_t token = owner.ok() ? (*owner)->token() : 0;
    if (write(fds[1], &token, sizeof token) != sizeof token) _exit(1);
    for (;;) pause();
  }
  close(fds[1]);
  EXPECT_EQ(read(fds[0], &child.token, sizeof child.token), static_cast<ssize_t>(sizeof child.token));
  close(fds[0]);
  return child;
}

void Kill(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
}

TEST(RackPool, MappingIsAliveWhileItsOwnerLivesAndNotAfterItIsKilled) {
  PoolObject pool;
  OwnerChild owner = StartOwner(pool);
  ASSERT_NE(owner.token, 0u);
  auto mapped = PoolMapping::Map(pool.Offer(owner.token));
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  PoolMapping& m = **mapped;
  EXPECT_TRUE(m.Alive());
  // The same bytes as the object's.
  pool.data()[100] = 42;
  EXPECT_EQ(m.data()[100], 42);
  m.data()[200] = 7;
  EXPECT_EQ(pool.data()[200], 7);
  Kill(owner.pid);
  EXPECT_FALSE(m.Alive()) << "the kernel marks a dead owner's robust mutex";
  // A new owner (a restarted node re-attaching the object) does not revive
  // the old mapping: another token.
  OwnerChild second = StartOwner(pool);
  EXPECT_NE(second.token, owner.token);
  EXPECT_FALSE(m.Alive());
  auto again = PoolMapping::Map(pool.Offer(second.token));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE((*again)->Alive());
  Kill(second.pid);
  EXPECT_FALSE((*again)->Alive());
}

TEST(RackPool, ClosedOwnerEndsTheMapping) {
  PoolObject pool;
  auto owner = PoolOwner::Claim(pool.page());
  ASSERT_TRUE(owner.ok()) << owner.status().ToString();
  auto mapped = PoolMapping::Map(pool.Offer((*owner)->token()));
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_TRUE((*mapped)->Alive());
  owner->reset();
  EXPECT_FALSE((*mapped)->Alive());
}

TEST(RackPool, RefusesAnotherObjectADeadOwnerAndAMissingObject) {
  PoolObject pool;
  OwnerChild owner = StartOwner(pool);
  EXPECT_EQ(PoolMapping::Map(pool.Offer(owner.token + 1)).status().code(), Status::Code::kFailedPrecondition);
  PoolOffer wrong_size = pool.Offer(owner.token);
  wrong_size.object_bytes += 4096;
  wrong_size.owner_offset += 4096;
  EXPECT_EQ(PoolMapping::Map(wrong_size).status().code(), Status::Code::kFailedPrecondition);
  Kill(owner.pid);
  EXPECT_EQ(PoolMapping::Map(pool.Offer(owner.token)).status().code(), Status::Code::kFailedPrecondition);
  PoolOffer missing = pool.Offer(owner.token);
  missing.shm = "/pulse-rack-test-no-such-object";
  EXPECT_EQ(PoolMapping::Map(missing).status().code(), Status::Code::kNotFound);
}

TEST(RackPool, OfferRoundTripsAndMalformedOffersNameTheField) {
  PoolOffer o{.rack = "b", .shm = "/x", .bytes = 8192, .object_bytes = 16384, .owner_offset = 12288, .token = 9};
  auto back = OfferFromJson(OfferToJson(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rack, "b");
  EXPECT_EQ(back->shm, "/x");
  EXPECT_EQ(back->bytes, 8192u);
  EXPECT_EQ(back->object_bytes, 16384u);
  EXPECT_EQ(back->owner_offset, 12288u);
  EXPECT_EQ(back->token, 9u);
  nlohmann::json j = OfferToJson(o);
  j.erase("token");
  auto missing = OfferFromJson(j);
  EXPECT_EQ(missing.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("token"), std::string::npos);
  o.owner_offset = 4096;  // the data would overlap the owner page
  EXPECT_EQ(OfferFromJson(OfferToJson(o)).status().code(), Status::Code::kInvalidArgument);
}

TEST(FrameGates, AnAccessEntersOnlyAnOpenGateOfTheExpectedPage) {
  std::vector<uint64_t> area(2 * 16, 0);  // two gates of 16 bytes
  FrameGates gates(area.data(), 2 * 4096);
  ASSERT_EQ(gates.count(), 2u);
  EXPECT_TRUE(gates.Enter(0, 0));
  EXPECT_FALSE(gates.Enter(0, 7)) << "the frame holds its own page, not page 6";
  EXPECT_FALSE(gates.Enter(2, 0)) << "no such frame";
  // One access is in: closing waits for it, and gives up after the bound.
  EXPECT_FALSE(gates.Close(0, std::chrono::milliseconds(20)));
  EXPECT_TRUE(gates.Enter(0, 0)) << "a close that timed out leaves the gate open";
  gates.Leave(0);
  gates.Leave(0);
  ASSERT_TRUE(gates.Close(0, std::chrono::milliseconds(20)));
  EXPECT_FALSE(gates.Enter(0, 0)) << "closed";
  EXPECT_TRUE(gates.Enter(1, 0)) << "gates are per frame";
  gates.Leave(1);
  gates.Open(0, 7);  // the frame holds page 6 now
  EXPECT_FALSE(gates.Enter(0, 0));
  EXPECT_TRUE(gates.Enter(0, 7));
  gates.Leave(0);
}

// Dekker's exchange under contention: while the mover holds a gate closed
// no access is inside it.
TEST(FrameGates, NoAccessIsInsideWhileTheMoverHoldsTheGateClosed) {
  std::vector<uint64_t> area(16, 0);
  FrameGates gates(area.data(), 4096);
  std::atomic<int> inside{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> entered{0};
  std::thread access([&] {
    while (!stop.load()) {
      if (!gates.Enter(0, 0)) continue;
      inside.fetch_add(1);
      entered.fetch_add(1);
      inside.fetch_sub(1);
      gates.Leave(0);
    }
  });
  // Close and reopen until the accessing thread has entered often while the
  // mover was at work (it may start late on a busy machine); the deadline
  // only bounds a broken gate that never lets it in.
  int closes = 0;
  int refused = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((closes < 2000 || entered.load() < 1000) &&
         std::chrono::steady_clock::now() < deadline) {
    if (!gates.Close(0, std::chrono::milliseconds(1000))) {
      ++refused;
      continue;
    }
    ++closes;
    EXPECT_EQ(inside.load(), 0) << "an access is inside a closed gate";
    gates.Open(0, 0);
  }
  stop = true;
  access.join();
  EXPECT_EQ(refused, 0) << "the gate did not drain within a second";
  EXPECT_GE(closes, 2000);
  EXPECT_GE(entered.load(), 1000u);
}

}  // namespace
}  // namespace pulse::rack
