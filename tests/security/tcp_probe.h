// Hostile-peer tools for the security tests: the TCP ports a process
// listens on, and raw connections that send what a stranger might.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pulse::testing {

// Every TCP port process `pid` listens on (IPv4 and IPv6), from
// /proc/<pid>/fd and /proc/<pid>/net/tcp{,6}: pulse's own listener and any
// UCX transport opened (its TCP interfaces listen too).
std::vector<uint16_t> ListeningPorts(pid_t pid);

// Opens a TCP connection to 127.0.0.1:port and returns its fd, or -1.
int ConnectRaw(uint16_t port);

// Connects, sends `bytes`, and closes once the peer closed or `linger`
// passed (reading and discarding what it answers).  Returns the number of
// bytes the peer answered, or -1 if the connection could not be made.
long SendAndClose(uint16_t port, const std::vector<uint8_t>& bytes,
                  std::chrono::milliseconds linger = std::chrono::milliseconds(200));

// Waits (poll, bounded by `timeout`) for the peer to close `fd`; true if it
// did (EOF or reset), false if the timeout passed first.
bool PeerClosesWithin(int fd, std::chrono::milliseconds timeout);

}  // namespace pulse::testing
