#include "security/tcp_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace pulse::testing {
namespace {

using Clock = std::chrono::steady_clock;

// The inodes of the sockets process `pid` has open.
std::set<unsigned long> SocketInodes(pid_t pid) {
  std::set<unsigned long> inodes;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return inodes;
  while (dirent* e = readdir(d)) {
    char target[128] = {};
    const std::string link = dir + "/" + e->d_name;
    ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    unsigned long inode = 0;
    if (n > 0 && std::sscanf(target, "socket:[%lu]", &inode) == 1) inodes.insert(inode);
  }
  closedir(d);
  return inodes;
}

}  // namespace

std::vector<uint16_t> ListeningPorts(pid_t pid) {
  const std::set<unsigned long> inodes = SocketInodes(pid);
  std::set<uint16_t> ports;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retrans, uid, timeout;
      unsigned long inode = 0;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retrans >> uid >> timeout >> inode;
      if (state != "0A" || !inodes.count(inode)) continue;  // 0A: LISTEN
      const size_t colon = local.rfind(':');
      if (colon == std::string::npos) continue;
      ports.insert(static_cast<uint16_t>(std::stoul(local.substr(colon + 1), nullptr, 16)));
    }
  }
  return {ports.begin(), ports.end()};
}

int ConnectRaw(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

long SendAndClose(uint16_t port, const std::vector<uint8_t>& bytes, std::chrono::milliseconds linger) {
  int fd = ConnectRaw(port);
  if (fd < 0) return -1;
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the peer closed on us: fine
    sent += static_cast<size_t>(n);
  }
  long answered = 0;
  const auto deadline = Clock::now() + linger;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    answered += n;
  }
  close(fd);
  return answered;
}

bool PeerClosesWithin(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return true;
  }
}

}  // namespace pulse::testing
