// Tenant isolation over real processes (a switch and two memory nodes): a
// client of tenant 2 cannot read, write, traverse, STORE into, lock, free
// or RPC into tenant 1's memory by any path.  Each path is a separate
// assertion that the operation is refused with PermissionDenied (or, for
// traversals, the protection fault that maps to it) and that tenant 1's
// bytes are unchanged afterwards.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "protocol/control_reply.h"
#include "pulse/assembler.h"
#include "pulse/client.h"
#include "pulse/program.h"
#include "pulse/rpc.h"
#include "rpc/handlers/rpc_states.h"
#include "support/local_rack.h"

namespace pulse::testing {
namespace {

ProgramRef Program(const char* text) {
  auto insns = Assemble(text);
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  auto program = VerifiedProgram::Create(std::move(*insns));
  EXPECT_TRUE(program.ok()) << program.status().ToString();
  return std::move(program).value();
}

class TenantIsolation : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(rack_.Start(2));
    owner_ = Connect(1);
    other_ = Connect(2);
    ASSERT_NE(owner_, nullptr);
    ASSERT_NE(other_, nullptr);
    auto a = owner_->Allocate(kBytes);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    secret_ = *a;
    std::vector<uint8_t> bytes(kBytes);
    for (size_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
    ASSERT_TRUE(owner_->Write(secret_, bytes.data(), bytes.size()).ok());
    expected_ = bytes;
  }

  std::unique_ptr<Client> Connect(TenantId tenant) {
    ClientOptions options;
    options.switch_address = rack_.switch_address();
    options.tenant = tenant;
    auto c = Client::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Tenant 1's bytes, read by tenant 1.
  void ExpectUnchanged() {
    std::vector<uint8_t> seen(kBytes);
    ASSERT_TRUE(owner_->Read(secret_, seen.data(), seen.size()).ok());
    EXPECT_EQ(seen, expected_) << "tenant 1's bytes changed";
  }

  static constexpr size_t kBytes = 256;
  LocalRack rack_;
  std::unique_ptr<Client> owner_, other_;
  uint64_t secret_ = 0;
  std::vector<uint8_t> expected_;
};

TEST_F(TenantIsolation, OneSidedReadIsRefused) {
  std::vector<uint8_t> seen(kBytes, 0);
  Status s = other_->Read(secret_, seen.data(), seen.size());
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied) << s.ToString();
  EXPECT_EQ(seen, std::vector<uint8_t>(kBytes, 0)) << "bytes leaked into a refused read";
  ExpectUnchanged();
}

TEST_F(TenantIsolation, OneSidedWriteIsRefused) {
  std::vector<uint8_t> junk(kBytes, 0xee);
  Status s = other_->Write(secret_, junk.data(), junk.size());
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied) << s.ToString();
  ExpectUnchanged();
}

TEST_F(TenantIsolation, TheNodesHandNoKeyToAnotherTenant) {
  // hello hands out no key at all; "key" for tenant 1's memory as tenant 2
  // is refused, and the raw test CPU node gets nothing either.
  json hello = rack_.cpu().Call(rack_.view(0).ep, {{"op", "hello"}});
  ASSERT_TRUE(hello.value("ok", false)) << hello.dump();
  EXPECT_FALSE(hello.contains("rkey")) << hello.dump();
  const uint32_t node = *owner_->NodeOf(secret_);
  auto key = rack_.KeyFor(node, secret_, /*tenant=*/2);
  EXPECT_EQ(key.status().code(), Status::Code::kPermissionDenied) << key.status().ToString();
  uint8_t byte = 0;
  EXPECT_EQ(rack_.Get(node, secret_, &byte, 1, /*tenant=*/2).code(), Status::Code::kPermissionDenied);
  ExpectUnchanged();
}

TEST_F(TenantIsolation, TraversalFaultsOffloadedAndAtTheCpuNode) {
  auto read = Program("LOAD data\nADD sp[0], data[0]\nRETURN");
  for (ExecutionMode mode : {ExecutionMode::kOffload, ExecutionMode::kCpuNode}) {
    SCOPED_TRACE(mode == ExecutionMode::kOffload ? "offloaded" : "at the CPU node");
    auto r = other_->Traverse(read, secret_, std::vector<uint8_t>(8, 0), {.mode = mode});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(TraversalStatusCode(r->status), Status::Code::kPermissionDenied) << TraversalStatusName(r->status);
    EXPECT_EQ(r->scratch, std::vector<uint8_t>(8, 0)) << "bytes leaked into the scratch pad";
  }
  ExpectUnchanged();
}

TEST_F(TenantIsolation, StoreFaults) {
  // Tenant 2 STOREs from its own memory into tenant 1's.
  auto mine = other_->Allocate(64);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  std::vector<uint8_t> scratch(16, 0xee);  // sp[0]: where, sp[8]: what
  std::memcpy(scratch.data(), &secret_, 8);
  auto store = Program("LOAD data\nMOVE r1, sp[0]\nSTORE [r1], sp[8]\nRETURN");
  for (ExecutionMode mode : {ExecutionMode::kOffload, ExecutionMode::kCpuNode}) {
    SCOPED_TRACE(mode == ExecutionMode::kOffload ? "offloaded" : "at the CPU node");
    auto r = other_->Traverse(store, *mine, scratch, {.mode = mode});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(TraversalStatusCode(r->status), Status::Code::kPermissionDenied) << TraversalStatusName(r->status);
  }
  ExpectUnchanged();
}

TEST_F(TenantIsolation, LockIsRefused) {
  auto granted = other_->TryLock(secret_, 7, /*exclusive=*/true, std::chrono::seconds(10));
  EXPECT_EQ(granted.status().code(), Status::Code::kPermissionDenied) << granted.status().ToString();
  // The owner's lock is free: tenant 2 took nothing.
  auto mine = owner_->TryLock(secret_, 1, /*exclusive=*/true, std::chrono::seconds(10));
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_TRUE(*mine);
  EXPECT_EQ(other_->Unlock(secret_, 1).code(), Status::Code::kPermissionDenied);
  EXPECT_EQ(other_->RenewLock(secret_, 1, std::chrono::seconds(1)).code(), Status::Code::kPermissionDenied);
  ExpectUnchanged();
}

TEST_F(TenantIsolation, FreeIsRefused) {
  // Client::Free recycles locally; the node's free is the path that gives
  // memory back, so it is tried directly, for the allocation's base.
  const uint32_t node = *owner_->NodeOf(secret_);
  json key = rack_.cpu().Call(rack_.view(node).ep, {{"op", "key"}, {"addr", secret_}, {"tenant", 1}});
  ASSERT_TRUE(key.value("ok", false)) << key.dump();
  json f = rack_.cpu().Call(rack_.view(node).ep, {{"op", "free"}, {"base", key["base"]}, {"tenant", 2}});
  EXPECT_EQ(ControlReplyStatus(f).code(), Status::Code::kPermissionDenied) << f.dump();
  ExpectUnchanged();
}

TEST_F(TenantIsolation, RootsAndSessionsAreRefused) {
  ASSERT_TRUE(owner_->PublishRoot("secret", secret_).ok());
  EXPECT_EQ(other_->OpenRoot("secret").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(other_->DropRoot("secret").code(), Status::Code::kNotFound);
  // Ending tenant 1's session as tenant 2.
  const uint32_t node = *owner_->NodeOf(secret_);
  json end = rack_.cpu().Call(rack_.view(node).ep,
                              {{"op", "end_session"}, {"session", owner_->session()}, {"tenant", 2}});
  EXPECT_EQ(ControlReplyStatus(end).code(), Status::Code::kPermissionDenied) << end.dump();
  auto opened = owner_->OpenRoot("secret");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(*opened, secret_);
  ExpectUnchanged();
}

TEST_F(TenantIsolation, RpcFaults) {
  auto rpc = RpcClient::Create(other_.get());
  ASSERT_TRUE(rpc.ok()) << rpc.status().ToString();
  const rpc::UmapFindState st{42, rpc::kUmapStartIsSlot, 0, 0, 0};
  auto r = (*rpc)->Call(kRpcUmapFind, secret_,
                        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&st), sizeof(st)));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(TraversalStatusCode(r->status), Status::Code::kPermissionDenied) << TraversalStatusName(r->status);
  ExpectUnchanged();
}

}  // namespace
}  // namespace pulse::testing
