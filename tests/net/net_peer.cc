// A pulse::net peer in its own process, for the net tests.
//
//   net_peer echo <fd>   listen on 127.0.0.1:0, write the port (uint16) to
//                        fd, answer kEcho and kDescribe
//   net_peer rma <fd>    as echo, and register a kPeerRegionSize region
//                        filled with PatternByte(i); send it to each peer
//                        that connects (kRegion: u64 addr, u64 size, rkey)
//
// It exits after two minutes at most; the tests kill it sooner.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "net/peer_protocol.h"
#include "pulse/net.h"

using namespace pulse::net;
using namespace pulse::net::testing;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: net_peer echo|rma <fd>\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int fd = std::atoi(argv[2]);
  WorkerOptions options;
  options.name = "net_peer";
  options.insecure = true;  // a test peer on loopback, without a cluster secret
  auto created = Worker::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "net_peer: %s\n", created.status().ToString().c_str());
    return 2;
  }
  Worker& w = **created;
  w.SetHandler(kEcho, [&w](EndpointId from, std::span<const uint8_t> p) {
    (void)w.Send(from, kEchoReply, p);
  });
  w.SetHandler(kDescribe, [&w](EndpointId from, std::span<const uint8_t>) {
    auto d = w.DescribeEndpoint(from);
    std::string text = d.ok() ? *d : d.status().ToString();
    (void)w.Send(from, kDescribeReply,
                 std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()),
                                          text.size()));
  });

  std::vector<uint8_t> region;
  MemoryRegion mr;
  if (mode == "rma") {
    region.resize(kPeerRegionSize);
    for (size_t i = 0; i < region.size(); ++i) region[i] = PatternByte(i);
    auto r = w.RegisterMemory(region.data(), region.size());
    if (!r.ok()) {
      std::fprintf(stderr, "net_peer: %s\n", r.status().ToString().c_str());
      return 2;
    }
    mr = std::move(r).value();
    w.SetAcceptHandler([&w, &mr](EndpointId ep, const std::string&) {
      std::vector<uint8_t> msg(16 + mr.rkey().size());
      uint64_t addr = mr.remote_address();
      uint64_t size = mr.size();
      std::memcpy(msg.data(), &addr, 8);
      std::memcpy(msg.data() + 8, &size, 8);
      std::memcpy(msg.data() + 16, mr.rkey().data(), mr.rkey().size());
      (void)w.Send(ep, kRegion, std::move(msg));
    });
  } else if (mode != "echo") {
    std::fprintf(stderr, "net_peer: unknown mode %s\n", mode.c_str());
    return 2;
  }

  auto port = w.Listen("127.0.0.1", 0);
  if (!port.ok()) {
    std::fprintf(stderr, "net_peer: %s\n", port.status().ToString().c_str());
    return 2;
  }
  uint16_t p = *port;
  if (write(fd, &p, sizeof(p)) != static_cast<ssize_t>(sizeof(p))) return 2;
  auto end = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (std::chrono::steady_clock::now() < end) {
    (void)w.RunUntil([] { return false; }, std::chrono::seconds(1));
  }
  return 0;
}
