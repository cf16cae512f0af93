// memnode::Peers, the memory node's connections to the other memory nodes
// (direct routing), with real Workers on threads of this process.
#include "memnode/peers.h"

#include <atomic>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "net/test_util.h"
#include "protocol/routing_table.h"
#include "pulse/cluster.h"

namespace pulse::memnode {
namespace {

using namespace std::chrono_literals;
using net::testing::MakeWorker;
using net::testing::PeerThread;

RoutingTable TableOf(uint32_t version, const std::string& address) {
  nlohmann::json j = {{"version", version},
                      {"nodes", {{{"node", 5u}, {"address", address}, {"base", FarBase(5)}, {"size", uint64_t{1} << 20},
                                  {"alive", true}}}}};
  Result<RoutingTable> t = RoutingTable::FromJson(j);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : RoutingTable();
}

// Issue 14: connecting to a peer runs the worker's handlers, and the
// switch's routing-table push among them replaces the table the caller took
// the peer's entry from.  Peers keeps its own copy of the entry: before, it
// read the entry (node id, address) after the connection attempt, from the
// freed table -- a heap-use-after-free that ASan turned into a memory node
// aborting while a restarted peer came back (the continuations' first node
// died, and their requests rode out its absence past the test's wait).
TEST(Peers, ATablePushedWhileConnectingDoesNotPullTheEntryFromUnderIt) {
  PeerThread next_node;  // the memory node the continuation goes to
  ASSERT_TRUE(next_node.ok());
  std::atomic<net::EndpointId> accepted{net::kInvalidEndpoint};
  PeerThread the_switch({}, [&](net::Worker& w) {
    w.SetAcceptHandler([&](net::EndpointId ep, const std::string&) { accepted = ep; });
  });
  ASSERT_TRUE(the_switch.ok());

  std::unique_ptr<net::Worker> worker = MakeWorker();
  ASSERT_NE(worker, nullptr);
  const std::string address = fmt::format("127.0.0.1:{}", next_node.port());
  RoutingTable table = TableOf(1, address);
  std::vector<RouteEntry> reused;
  worker->SetHandler(kAmRouting, [&](net::EndpointId, std::span<const uint8_t> p) {
    nlohmann::json j = nlohmann::json::parse(p.begin(), p.end(), nullptr, /*allow_exceptions=*/false);
    Result<RoutingTable> newer = RoutingTable::FromJson(j);
    ASSERT_TRUE(newer.ok()) << newer.status().ToString();
    EXPECT_TRUE(table.Adopt(std::move(newer).value()));  // frees the entries of version 1
    // What a node does next: allocate.  (The allocator hands back the bytes
    // just freed: a reference into the old table now reads this entry.)
    reused.assign(1, RouteEntry{6, "127.0.0.1:1", 0, 1, true});
  });
  Result<net::EndpointId> to_switch = worker->Connect("127.0.0.1", the_switch.port(), 5s);
  ASSERT_TRUE(to_switch.ok()) << to_switch.status().ToString();
  ASSERT_TRUE(worker->RunUntil([&] { return accepted.load() != net::kInvalidEndpoint; }, 10s).ok());

  // The next node is alive but does not answer (its thread is paused), so
  // the attempt waits out its whole timeout, running handlers; the push is
  // sent before it starts.
  next_node.Pause();
  const std::string pushed = TableOf(2, address).ToJson().dump();
  ASSERT_TRUE(the_switch.Call([&](net::Worker& w) {
    ASSERT_TRUE(w.Send(accepted.load(), kAmRouting,
                       std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(pushed.data()), pushed.size()))
                    .ok());
  }));

  Peers peers(worker.get(), /*connect_timeout=*/2000ms, /*retry_after=*/60000ms);
  Result<net::EndpointId> ep = peers.MemNode(*table.Find(5));
  ASSERT_EQ(table.version(), 2u) << "the push did not arrive during the connection attempt: the test proves nothing";
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), Status::Code::kUnavailable) << ep.status().ToString();
  // The failure was noted for the node the attempt was made for: with the
  // next node answering again, it is not tried before retry_after.  (Noted
  // for whatever the freed entry held, node 5 would be tried and reached.)
  next_node.Resume();
  Result<net::EndpointId> again = peers.MemNode(*table.Find(5));
  EXPECT_FALSE(again.ok()) << "node 5 was tried again at once";
  EXPECT_EQ(peers.memnode_connections(), 0u);
}

// Issue 14: the traversal path never connects (a connect inside the
// engine's pass stalled the node; inside a handler it cannot be made).  It
// takes an open connection or notes the node as wanted; the event loop's
// ConnectWanted opens it and names the node (whose sent-program memory the
// caller then drops), and a closed connection names its node too.
TEST(Peers, TheTraversalPathOnlyWantsAConnectionAndTheEventLoopOpensIt) {
  PeerThread next_node;
  ASSERT_TRUE(next_node.ok());
  std::unique_ptr<net::Worker> worker = MakeWorker();
  ASSERT_NE(worker, nullptr);
  RoutingTable table = TableOf(1, fmt::format("127.0.0.1:{}", next_node.port()));
  Peers peers(worker.get(), /*connect_timeout=*/5000ms, /*retry_after=*/60000ms);

  Result<net::EndpointId> none = peers.Connected(*table.Find(5));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kUnavailable) << none.status().ToString();
  EXPECT_EQ(peers.memnode_connections(), 0u) << "Connected() connected";
  ASSERT_TRUE(peers.has_wanted());

  EXPECT_EQ(peers.ConnectWanted(), std::vector<NodeId>{5});
  EXPECT_FALSE(peers.has_wanted());
  Result<net::EndpointId> ep = peers.Connected(*table.Find(5));
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  EXPECT_FALSE(peers.has_wanted());
  // Wanted again while open: nothing new is opened, nothing to forget.
  peers.Want(*table.Find(5));
  EXPECT_FALSE(peers.has_wanted());
  EXPECT_TRUE(peers.ConnectWanted().empty());

  EXPECT_EQ(peers.OnDisconnect(*ep), std::optional<NodeId>(5));
  EXPECT_EQ(peers.memnode_connections(), 0u);
  EXPECT_EQ(peers.OnDisconnect(*ep), std::nullopt);
  // A node marked down is neither connected nor wanted.
  RouteEntry down = *table.Find(5);
  down.alive = false;
  EXPECT_FALSE(peers.Connected(down).ok());
  EXPECT_FALSE(peers.has_wanted());
}

}  // namespace
}  // namespace pulse::memnode
