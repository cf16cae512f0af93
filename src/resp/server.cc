// The event loop of `pulse kv serve` (include/pulse/resp/server.h).
#include "pulse/resp/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <unordered_map>

#include <fmt/format.h>

#include "pulse/resp/reply.h"
#include "resp/commands.h"

namespace pulse::resp {
namespace {

uint64_t MicrosSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count();
}

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Connection {
  int fd = -1;
  uint64_t id = 0;
  RequestParser parser;
  std::deque<Request> pending;   // parsed, not yet run
  bool protocol_error = false;   // after `pending`, reply parser.error() and close
  std::string out;               // replies not yet sent
  size_t out_sent = 0;
  int protocol = 2;
  bool close_after = false;      // close once `out` is sent
  uint32_t interest = 0;         // epoll events registered
  explicit Connection(const ParserLimits& limits) : parser(limits) {}
};

}  // namespace

struct Server::Impl {
  Client* client;
  Keyspace* keyspace;
  ServerOptions options;
  int listen_fd = -1;
  int epoll_fd = -1;
  int stop_fd = -1;
  uint16_t port = 0;
  uint64_t next_id = 1;
  std::unordered_map<int, std::unique_ptr<Connection>> connections;
  ServerCounters counters;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  ~Impl() {
    for (auto& [fd, c] : connections) ::close(fd);
    if (listen_fd >= 0) ::close(listen_fd);
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (stop_fd >= 0) ::close(stop_fd);
  }

  void SetInterest(Connection& c) {
    uint32_t want = 0;
    if (!c.close_after && !c.protocol_error && c.out.size() - c.out_sent < options.max_output_bytes) want |= EPOLLIN;
    if (c.out_sent < c.out.size()) want |= EPOLLOUT;
    if (want == c.interest) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.fd = c.fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
    c.interest = want;
  }

  void Close(int fd) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    connections.erase(fd);
    --counters.connections_open;
  }

  void Accept() {
    for (;;) {
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a connection that died before accept
      if (connections.size() >= options.max_connections) {
        static const char kFull[] = "-ERR max number of clients reached\r\n";
        (void)!::write(fd, kFull, sizeof kFull - 1);
        ::close(fd);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Connection>(options.limits);
      c->fd = fd;
      c->id = next_id++;
      c->interest = EPOLLIN;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
      connections.emplace(fd, std::move(c));
      ++counters.connections_accepted;
      ++counters.connections_open;
    }
  }

  // Reads what the socket has and parses the complete requests.  False if
  // the peer is gone.
  bool ReadFrom(Connection& c) {
    char buf[64 * 1024];
    for (;;) {
      ssize_t n = ::read(c.fd, buf, sizeof buf);
      if (n > 0) {
        c.parser.Feed(std::string_view(buf, static_cast<size_t>(n)));
        if (static_cast<size_t>(n) < sizeof buf) break;
        continue;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return false;
    }
    for (;;) {
      Request r;
      auto state = c.parser.Next(&r);
      if (state == RequestParser::State::kRequest) {
        c.pending.push_back(std::move(r));
        continue;
      }
      if (state == RequestParser::State::kError) {
        c.protocol_error = true;
        ++counters.protocol_errors;
      }
      break;
    }
    return true;
  }

  bool WriteTo(Connection& c) {
    while (c.out_sent < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return false;
    }
    if (c.out_sent == c.out.size()) {
      c.out.clear();
      c.out_sent = 0;
    } else if (c.out_sent > (1 << 20)) {
      c.out.erase(0, c.out_sent);
      c.out_sent = 0;
    }
    return true;
  }

  static std::string InfoText(void* self) {
    auto* impl = static_cast<Impl*>(self);
    const auto& cc = impl->client->counters();
    const auto& ks = impl->keyspace->stats();
    const auto uptime =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - impl->started).count();
    return fmt::format(
        "# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\nprocess_id:{}\r\ntcp_port:{}\r\n"
        "uptime_in_seconds:{}\r\n"
        "# Clients\r\nconnected_clients:{}\r\n"
        "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n"
        "# Pulse\r\npulse_memory_nodes:{}\r\npulse_keyspace_directory:{:#x}\r\npulse_lock_batches:{}\r\n"
        "pulse_protocol_errors:{}\r\npulse_far_errors:{}\r\npulse_traversals:{}\r\npulse_offloaded:{}\r\n"
        "pulse_executed_locally:{}\r\npulse_remote_reads:{}\r\npulse_remote_writes:{}\r\npulse_timeouts:{}\r\n"
        "pulse_batch_requests:{}\r\npulse_phase_lock_us:{}\r\npulse_phase_prefetch_us:{}\r\n"
        "pulse_phase_run_us:{}\r\npulse_phase_settle_us:{}\r\npulse_phase_reply_us:{}\r\n"
        "pulse_lock_acquisitions:{}\r\npulse_lock_kept:{}\r\npulse_lock_yields:{}\r\npulse_async_writes:{}\r\n"
        "pulse_async_inserts:{}\r\npulse_cpu_inserts:{}\r\npulse_near_memory_splits:{}\r\n"
        "pulse_writes_redone:{}\r\npulse_fused_sets:{}\r\npulse_deferred_batches:{}\r\n"
        "pulse_lost_after_reply:{}\r\npulse_held_lookups:{}\r\npulse_leaf_starts:{}\r\n",
        getpid(), impl->port, uptime, impl->counters.connections_open, impl->counters.connections_accepted,
        impl->counters.commands, impl->client->memory_nodes(), impl->keyspace->directory(),
        impl->counters.batches, impl->counters.protocol_errors, impl->counters.far_errors, cc.traversals,
        cc.offloaded, cc.executed_locally, cc.remote_reads, cc.remote_writes, cc.timeouts,
        impl->counters.batch_requests, impl->counters.us_lock, impl->counters.us_prefetch, impl->counters.us_run,
        impl->counters.us_settle, impl->counters.us_reply, ks.lock_acquisitions, ks.lock_kept, ks.lock_yields,
        ks.async_writes, ks.async_inserts, ks.cpu_inserts, ks.near_memory_splits, ks.redone,
        ks.fused_sets, ks.deferred_batches, ks.lost_after_reply, ks.held_lookups, ks.leaf_starts);
  }

  // Runs up to max_batch pending requests, round robin over connections.
  void RunBatch() {
    std::vector<std::pair<Connection*, Request>> batch;
    bool needs_keyspace = false;
    for (bool more = true; more && batch.size() < options.max_batch;) {
      more = false;
      for (auto& [fd, c] : connections) {
        if (c->pending.empty() || c->close_after) continue;
        if (batch.size() >= options.max_batch) break;
        Request r = std::move(c->pending.front());
        c->pending.pop_front();
        // QUIT ends the connection: what follows it is not run.
        needs_keyspace = needs_keyspace || NeedsKeyspace(r);
        batch.emplace_back(c.get(), std::move(r));
        more = more || !c->pending.empty();
      }
    }
    if (batch.empty()) return;
    counters.batch_requests += batch.size();
    Status held = Status::Ok();
    auto phase = std::chrono::steady_clock::now();
    auto next_phase = [&](uint64_t* us) {
      *us += MicrosSince(phase);
      phase = std::chrono::steady_clock::now();
    };
    if (needs_keyspace) {
      held = keyspace->Begin();
      if (held.ok()) ++counters.batches;
    }
    next_phase(&counters.us_lock);
    if (needs_keyspace && held.ok()) {
      std::vector<std::string_view> keys;
      for (const auto& [c, r] : batch) CollectKeys(r, &keys);
      keyspace->Prefetch(keys, FusableSets(batch, keys));
    }
    next_phase(&counters.us_prefetch);
    const int64_t now = UnixMillis();
    // Each command's reply and the tickets of the asynchronous writes it
    // issued: a write that turns out lost at the end of the batch turns its
    // reply into an error (replies are sent only after the batch).
    struct Issued {
      Connection* c;
      size_t begin, end;
      uint64_t first_ticket, last_ticket;
    };
    std::vector<Issued> issued;
    issued.reserve(batch.size());
    for (auto& [c, r] : batch) {
      if (c->close_after) continue;  // after QUIT
      ++counters.commands;
      ReplyWriter reply(&c->out);
      reply.set_protocol(c->protocol);
      const size_t before = c->out.size();
      const uint64_t first_ticket = keyspace->stores_issued();
      if (NeedsKeyspace(r) && !held.ok()) {
        reply.Error("ERR pulse: " + held.ToString());
      } else if (Status alive = NeedsKeyspace(r) ? keyspace->KeepAlive() : Status::Ok(); !alive.ok()) {
        reply.Error("ERR pulse: " + alive.ToString());
      } else {
        CommandContext ctx;
        ctx.keyspace = keyspace;
        ctx.reply = &reply;
        ctx.now_ms = now;
        ctx.protocol = &c->protocol;
        ctx.close_after = &c->close_after;
        ctx.connection_id = c->id;
        ctx.info = &Impl::InfoText;
        ctx.server = this;
        Dispatch(ctx, r);
      }
      if (c->out.compare(before, 11, "-ERR pulse:") == 0) ++counters.far_errors;
      issued.push_back(Issued{c, before, c->out.size(), first_ticket, keyspace->stores_issued()});
    }
    next_phase(&counters.us_run);
    if (needs_keyspace && held.ok()) {
      // Keeps the lock for the next batch unless another server asked for
      // it; Loop() releases it when the connections go quiet.
      Status s = keyspace->End(/*keep=*/true);
      if (!s.ok()) fmt::print(stderr, "[kv] ending the batch: {}\n", s.ToString());
      if (!keyspace->FailedStores().empty()) ReplaceLostWrites(issued, s);
    }
    next_phase(&counters.us_settle);
  }

  // The plain SETs of a batch that may be written by their lookup traversal
  // ahead of the batch's order (Keyspace::Prefetch): only in a batch of
  // GET, SET, PING and ECHO (nothing that reads or changes the keyspace as a
  // whole, no QUIT that would leave a later SET unrun), and only SETs whose
  // key no other command of the batch names.
  template <typename Batch>
  static std::vector<Keyspace::KeyValue> FusableSets(const Batch& batch, const std::vector<std::string_view>& keys) {
    std::vector<Keyspace::KeyValue> sets;
    for (const auto& [c, r] : batch) {
      const std::string name = r.size() > 0 && r[0].size() <= 4 ? Lower(r[0]) : std::string("-");
      if (name != "get" && name != "set" && name != "ping" && name != "echo") return {};
      if (name == "set" && r.size() == 3) sets.emplace_back(r[1], r[2]);
    }
    if (sets.empty()) return sets;
    std::unordered_map<std::string_view, int> named;
    for (std::string_view k : keys) ++named[k];
    std::erase_if(sets, [&](const Keyspace::KeyValue& kv) { return named[kv.first] != 1; });
    return sets;
  }

  // Replies of commands whose asynchronous writes were lost become errors
  // (latest first, so earlier offsets in a connection's buffer stay valid).
  template <typename IssuedList>
  void ReplaceLostWrites(const IssuedList& issued, const Status& why) {
    const auto& failed = keyspace->FailedStores();
    for (auto it = issued.rbegin(); it != issued.rend(); ++it) {
      const bool lost = std::any_of(failed.begin(), failed.end(), [&](uint64_t t) {
        return t >= it->first_ticket && t < it->last_ticket;
      });
      if (!lost) continue;
      std::string error;
      ReplyWriter(&error).Error("ERR pulse: " + (why.ok() ? std::string("write lost") : why.ToString()));
      it->c->out.replace(it->begin, it->end - it->begin, error);
      ++counters.far_errors;
    }
    keyspace->ClearFailedStores();
  }

  // After its pending requests ran: a connection with a protocol error gets
  // the error and is closed; replies are sent.
  void Flush() {
    std::vector<int> dead;
    for (auto& [fd, c] : connections) {
      if (c->protocol_error && c->pending.empty() && !c->close_after) {
        ReplyWriter(&c->out).Error("ERR " + c->parser.error());
        c->close_after = true;
      }
      if (c->close_after) c->pending.clear();
      if (!WriteTo(*c) || (c->close_after && c->out.empty())) {
        dead.push_back(fd);
        continue;
      }
      SetInterest(*c);
    }
    for (int fd : dead) Close(fd);
  }

  bool AnyPending() const {
    for (const auto& [fd, c] : connections)
      if (!c->pending.empty() && !c->close_after) return true;
    return false;
  }

  Status Loop() {
    epoll_event events[256];
    for (;;) {
      // Pending requests left by a full batch: do not sleep.  Holding the
      // keyspace lock from the last batch: wait at most lock_linger for
      // more requests, then release it and sleep without a timeout.
      const bool holding = keyspace->holding();
      const int timeout = AnyPending() ? 0 : holding ? static_cast<int>(options.lock_linger.count()) : -1;
      int n = epoll_wait(epoll_fd, events, 256, timeout);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::IoError(fmt::format("epoll_wait: {}", std::strerror(errno)));
      }
      if (n == 0 && holding && !AnyPending()) {
        Status s = keyspace->Release();
        if (!s.ok()) fmt::print(stderr, "[kv] releasing the keyspace lock: {}\n", s.ToString());
        continue;
      }
      std::vector<int> dead;
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == stop_fd) {
          Status s = keyspace->Release();
          if (!s.ok()) fmt::print(stderr, "[kv] releasing the keyspace lock: {}\n", s.ToString());
          return Status::Ok();
        }
        if (fd == listen_fd) {
          Accept();
          continue;
        }
        auto it = connections.find(fd);
        if (it == connections.end()) continue;
        Connection& c = *it->second;
        if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c.protocol_error && !c.close_after) {
          if (!ReadFrom(c)) {
            dead.push_back(fd);
            continue;
          }
        }
        if ((events[i].events & EPOLLOUT) && !WriteTo(c)) dead.push_back(fd);
      }
      for (int fd : dead)
        if (connections.count(fd)) Close(fd);
      RunBatch();
      const auto flush_start = std::chrono::steady_clock::now();
      Flush();
      counters.us_reply += MicrosSince(flush_start);
    }
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::Listen(Client* client, Keyspace* keyspace, const ServerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->client = client;
  impl->keyspace = keyspace;
  impl->options = options;
  const size_t colon = options.listen.rfind(':');
  if (colon == std::string::npos)
    return Status::InvalidArgument(fmt::format("--listen {}: expected host:port", options.listen));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  const std::string host = options.listen.substr(0, colon);
  char* end = nullptr;
  const unsigned long port = std::strtoul(options.listen.c_str() + colon + 1, &end, 10);
  if (port > 65535 || end == options.listen.c_str() + colon + 1 || *end != '\0' ||
      inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1)
    return Status::InvalidArgument(fmt::format("--listen {}: expected an IPv4 host:port", options.listen));
  addr.sin_port = htons(static_cast<uint16_t>(port));
  impl->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(impl->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (impl->listen_fd < 0 || ::bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(impl->listen_fd, 511) != 0)
    return Status::IoError(fmt::format("listen on {}: {}", options.listen, std::strerror(errno)));
  socklen_t len = sizeof addr;
  getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  impl->port = ntohs(addr.sin_port);
  impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->stop_fd < 0) return Status::IoError(fmt::format("epoll: {}", std::strerror(errno)));
  for (int fd : {impl->listen_fd, impl->stop_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

uint16_t Server::port() const { return impl_->port; }
Status Server::Run() { return impl_->Loop(); }
void Server::RequestStop() {
  const uint64_t one = 1;
  (void)!::write(impl_->stop_fd, &one, sizeof one);
}
const ServerCounters& Server::counters() const { return impl_->counters; }

}  // namespace pulse::resp
