// Connections: pulse's own TCP listener and handshake (handshake.h), then
// UCX endpoints created from the worker addresses the handshake exchanged.
//
// Every socket is nonblocking and driven by the worker's thread: the
// listener and the handshakes advance inside ProgressOnce (when a sleep saw
// one of their fds ready, and otherwise every kLinkCheckInterval, so that the
// polling loop does not pay a system call per poll) and a sleeping worker
// also waits on their fds (AppendLinkFds).  A read never asks for more than
// the rest of the current message, whose size is known (and checked against
// its limit) from its fixed header; every handshake has a deadline.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "net/internal.h"

namespace pulse::net {
namespace {

using handshake::Kind;
using handshake::Role;

// How often the polling loop looks at the links when no sleep reported them.
constexpr auto kLinkCheckIntervalIdle = std::chrono::milliseconds(1);
constexpr auto kLinkCheckIntervalBusy = std::chrono::microseconds(100);  // handshakes under way
// Connections accepted per ProgressOnce (the rest wait for the next one).
constexpr int kAcceptBatch = 64;
// How long the listener is left alone when the process is out of descriptors.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

// Resolves host:port to a socket address.  An empty host means "any".
Status Resolve(const std::string& host, uint16_t port, bool passive, sockaddr_storage* out, socklen_t* out_len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    return Status::InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  std::memcpy(out, res->ai_addr, res->ai_addrlen);
  *out_len = res->ai_addrlen;
  freeaddrinfo(res);
  return Status::Ok();
}

std::string AddressText(const sockaddr_storage& sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

uint16_t PortOf(const sockaddr_storage& sa) {
  if (sa.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&sa)->sin_port);
  if (sa.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_port);
  return 0;
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void OnEpError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* e = static_cast<Endpoint*>(arg);
  Status why = status == UCS_ERR_CONNECTION_RESET
                   ? Status::Unavailable("peer " + e->peer + " closed the connection or died")
                   : FromUcs(status, "endpoint to " + e->peer);
  e->impl->MarkFailed(e, std::move(why));
}

// What happened to a link on one service pass.
enum class IoResult { kProgress, kWouldBlock, kClosed, kError };

// Sends what is queued.  kClosed/kError: the link is dead.
IoResult FlushLink(Link* l) {
  while (!l->out.empty()) {
    ssize_t n = send(l->fd, l->out.data(), l->out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      l->out.erase(l->out.begin(), l->out.begin() + n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return IoResult::kWouldBlock;
    if (n < 0 && errno == EINTR) continue;
    return IoResult::kError;
  }
  return IoResult::kProgress;
}

// Reads the rest of the message of `kind` into l->in, never more than it
// announces.  *complete: l->in holds one whole message.  Errors: a prefix
// that is not a handshake message, or too long.
Result<IoResult> ReadMessage(Link* l, Kind kind, bool* complete) {
  *complete = false;
  for (;;) {
    size_t need = 0;
    auto size = handshake::MessageSize(kind, l->in, &need);
    if (!size.ok()) return size.status();
    if (size->has_value()) need = **size;
    if (l->in.size() >= need && size->has_value()) {
      *complete = true;
      return IoResult::kProgress;
    }
    const size_t old = l->in.size();
    l->in.resize(need);
    ssize_t n = recv(l->fd, l->in.data() + old, need - old, 0);
    if (n > 0) {
      l->in.resize(old + static_cast<size_t>(n));
      continue;
    }
    l->in.resize(old);
    if (n == 0) return IoResult::kClosed;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::kWouldBlock;
    if (errno == EINTR) continue;
    return IoResult::kError;
  }
}

}  // namespace

Status Worker::Impl::SetUpLinks() {
  if (options.credentials) {
    credentials = *options.credentials;
  } else if (const char* path = getenv(kSecretFileEnvironmentVariable); path != nullptr && *path != '\0') {
    auto key = ReadKeyFile(path);
    if (!key.ok()) {
      return StatusFromWire(StatusCodeToWire(key.status().code()),
                            std::string("$") + kSecretFileEnvironmentVariable + ": " + key.status().message());
    }
    credentials.cluster_secret = std::move(*key);
  }
  if (credentials.tenant && credentials.tenant_key.empty() && credentials.cluster_secret.empty()) {
    return Status::InvalidArgument("credentials: tenant " + std::to_string(*credentials.tenant) +
                                   " without a tenant key or cluster secret");
  }
  ucp_address_t* address = nullptr;
  size_t length = 0;
  ucs_status_t st = ucp_worker_get_address(worker, &address, &length);
  if (st != UCS_OK) return FromUcs(st, "ucp_worker_get_address");
  own_address.assign(reinterpret_cast<uint8_t*>(address), reinterpret_cast<uint8_t*>(address) + length);
  ucp_worker_release_address(worker, address);
  if (own_address.size() > handshake::kMaxWorkerAddress) {
    return Status::Internal("this worker's UCX address has " + std::to_string(length) + " bytes, more than the " +
                            std::to_string(handshake::kMaxWorkerAddress) + " the handshake carries");
  }
  return Status::Ok();
}

Status Worker::Impl::CreateUcpEndpoint(Endpoint* e, std::span<const uint8_t> address) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = OnEpError;
  params.err_handler.arg = e;
  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(worker, &params, &ep);
  if (st != UCS_OK) return FromUcs(st, "UCX endpoint to " + e->peer);
  e->ep = ep;
  return Status::Ok();
}

void Worker::Impl::CloseLink(Endpoint* e) {
  if (e->link_fd < 0) return;
  links.erase(e->link_fd);
  close(e->link_fd);
  e->link_fd = -1;
}

void Worker::Impl::CloseAllLinks() {
  for (auto& [fd, l] : links) {
    if (Endpoint* e = Find(l->ep); e != nullptr && e->link_fd == fd) e->link_fd = -1;
    close(fd);
  }
  links.clear();
}

Result<uint16_t> Worker::Listen(const std::string& host, uint16_t port) {
  Impl& m = *impl_;
  if (m.listen_fd >= 0) return Status::InvalidArgument("worker is already listening");
  if (m.credentials.cluster_secret.empty() && !m.options.insecure) {
    return Status::FailedPrecondition("listen on " + host + ":" + std::to_string(port) +
                                      ": this worker has no cluster secret (WorkerOptions::credentials or $" +
                                      kSecretFileEnvironmentVariable +
                                      "); WorkerOptions::insecure allows an open listener");
  }
  sockaddr_storage sa{};
  socklen_t len = 0;
  PULSE_RETURN_IF_ERROR(Resolve(host, port, /*passive=*/true, &sa, &len));
  const std::string what = "listen on " + host + ":" + std::to_string(port);
  int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError(Errno(what.c_str()));
  int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&sa), len) != 0) {
    Status s = Status::IoError(Errno(what.c_str()) + (errno == EADDRINUSE ? std::string(" (address in use)") : ""));
    close(fd);
    return s;
  }
  if (listen(fd, SOMAXCONN) != 0) {
    Status s = Status::IoError(Errno(what.c_str()));
    close(fd);
    return s;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    Status s = Status::IoError(Errno(what.c_str()));
    close(fd);
    return s;
  }
  m.listen_fd = fd;
  return PortOf(bound);
}

bool Worker::open() const { return impl_->credentials.cluster_secret.empty(); }

void Worker::StopListening() {
  Impl& m = *impl_;
  if (m.listen_fd < 0) return;
  close(m.listen_fd);
  m.listen_fd = -1;
  // Handshakes not yet accepted end with the listener.
  for (auto it = m.links.begin(); it != m.links.end();) {
    Link::Stage s = it->second->stage;
    if (s == Link::Stage::kServerWantHello || s == Link::Stage::kServerWantProof || s == Link::Stage::kClosing) {
      close(it->first);
      it = m.links.erase(it);
    } else {
      ++it;
    }
  }
}

Status Worker::Impl::StartConnect(Endpoint* e, const std::string& host, uint16_t port, Clock::time_point deadline) {
  sockaddr_storage sa{};
  socklen_t len = 0;
  PULSE_RETURN_IF_ERROR(Resolve(host, port, /*passive=*/false, &sa, &len));
  int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError(Errno(("connect to " + e->peer).c_str()));
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&sa), len) != 0 && errno != EINPROGRESS) {
    Status s = Status::Unavailable(Errno(("connect to " + e->peer).c_str()));
    close(fd);
    return s;
  }
  auto l = std::make_unique<Link>();
  l->fd = fd;
  l->stage = Link::Stage::kClientConnecting;
  l->peer = e->peer;
  l->deadline = deadline;
  l->ep = e->id;
  PULSE_RETURN_IF_ERROR(handshake::RandomBytes(l->hello.nonce));
  if (credentials.tenant) {
    l->hello.role = Role::kTenant;
    l->hello.tenant = *credentials.tenant;
    l->key = credentials.tenant_key.empty() ? DeriveTenantKey(credentials.cluster_secret, *credentials.tenant)
                                            : credentials.tenant_key;
  } else if (!credentials.cluster_secret.empty()) {
    l->hello.role = Role::kCluster;
    l->key = credentials.cluster_secret;
  }
  l->out = handshake::EncodeHello(l->hello);
  e->link_fd = fd;
  links.emplace(fd, std::move(l));
  next_link_check = Clock::time_point{};  // look at it on the next progress
  return Status::Ok();
}

Result<EndpointId> Worker::Connect(const std::string& host, uint16_t port, Duration timeout) {
  Impl& m = *impl_;
  PULSE_RETURN_IF_ERROR(m.CheckBlockingAllowed("Connect"));
  Clock::time_point deadline = DeadlineAfter(timeout);
  Endpoint* e = m.NewEndpoint(/*accepted=*/false);
  e->peer = host + ":" + std::to_string(port);
  const EndpointId id = e->id;
  Status s = m.StartConnect(e, host, port, deadline);
  if (s.ok()) s = m.RunUntil([e] { return e->state != EpState::kConnecting; }, deadline);
  if (s.ok() && e->state == EpState::kReady) {
    e->announced = true;
    if (!e->inbound.empty()) m.to_drain.push_back(id);  // delivered at the next progress
    return id;
  }
  Status why = e->state == EpState::kFailed ? e->failure
               : (s.ok() || s.code() == Status::Code::kTimeout)
                   ? Status::Timeout("connect to " + e->peer + ": no answer within " + MicrosText(timeout))
                   : s;
  if (e->ep != nullptr) {
    m.ForceClose(e->ep);
    e->ep = nullptr;
  }
  m.CloseLink(e);
  m.failed.erase(std::remove(m.failed.begin(), m.failed.end(), id), m.failed.end());
  m.Erase(id);
  return why;
}

void Worker::Impl::AppendLinkFds(std::vector<pollfd>* fds) const {
  if (listen_fd >= 0 && Clock::now() >= accept_paused_until) fds->push_back(pollfd{listen_fd, POLLIN, 0});
  for (const auto& [fd, l] : links) {
    short events = POLLIN;
    if (!l->out.empty() || l->stage == Link::Stage::kClientConnecting) events |= POLLOUT;
    fds->push_back(pollfd{fd, events, 0});
  }
}

Clock::time_point Worker::Impl::NextLinkDeadline() const {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& [fd, l] : links) {
    if (l->stage != Link::Stage::kEstablished) next = std::min(next, l->deadline);
  }
  return next;
}

namespace {

// The link's endpoint while it is being connected (client side).
Endpoint* ConnectingEndpoint(Worker::Impl* m, Link* l) {
  Endpoint* e = m->Find(l->ep);
  return e != nullptr && !e->accepted && e->state == EpState::kConnecting ? e : nullptr;
}

}  // namespace

bool Worker::Impl::ServiceLinks(bool force) {
  const Clock::time_point now = Clock::now();
  if (!force && !links_ready && now < next_link_check) return false;
  links_ready = false;
  bool any = false;

  // New connections: each starts a handshake; beyond the limit the oldest
  // pending one is dropped (a flood of half-open connections costs its
  // senders their own slots, not the node).
  for (int i = 0; listen_fd >= 0 && now >= accept_paused_until && i < kAcceptBatch; ++i) {
    sockaddr_storage sa{};
    socklen_t len = sizeof(sa);
    int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the listener stays readable, so stop watching
      // it for a while instead of waking for it again and again.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_until = now + kAcceptPause;
      }
      break;  // EAGAIN, or a connection that went away already
    }
    any = true;
    size_t pending = 0;
    Link* oldest = nullptr;
    for (auto& [lfd, l] : links) {
      if (l->stage != Link::Stage::kServerWantHello && l->stage != Link::Stage::kServerWantProof &&
          l->stage != Link::Stage::kClosing) {
        continue;
      }
      ++pending;
      if (oldest == nullptr || l->accepted_at < oldest->accepted_at) oldest = l.get();
    }
    if (pending >= std::max<uint32_t>(1, options.max_pending_handshakes) && oldest != nullptr) {
      int ofd = oldest->fd;
      links.erase(ofd);
      close(ofd);
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto l = std::make_unique<Link>();
    l->fd = fd;
    l->stage = Link::Stage::kServerWantHello;
    l->peer = AddressText(sa);
    l->accepted_at = now;
    l->deadline = now + std::chrono::milliseconds(options.handshake_timeout_ms);
    links.emplace(fd, std::move(l));
  }

  std::vector<int> fds;
  fds.reserve(links.size());
  for (const auto& [fd, l] : links) fds.push_back(fd);
  for (int fd : fds) {
    auto it = links.find(fd);
    if (it == links.end()) continue;  // closed by an earlier step
    Link* l = it->second.get();
    // Ends this link; a client's endpoint fails with `why`.
    // (`l` is gone afterwards.)
    auto drop = [&](Status why) {
      any = true;
      const EndpointId id = l->ep;
      Endpoint* e = Find(id);
      const bool owns_endpoint = e != nullptr && e->link_fd == fd;
      if (owns_endpoint) e->link_fd = -1;
      links.erase(fd);
      close(fd);
      if (!owns_endpoint) return;
      if (e->state == EpState::kReady && e->announced) {
        // Deliver what the peer sent before it went (its messages may still
        // be in UCX's queues behind the end of the link).  Handlers run
        // here and may close the endpoint.
        for (int i = 0; i < 64 && ucp_worker_progress(worker) != 0; ++i) {
        }
        e = Find(id);
        if (e == nullptr) return;
      }
      MarkFailed(e, std::move(why));
    };
    if (l->stage != Link::Stage::kEstablished && now >= l->deadline) {
      drop(Status::Timeout("connect to " + l->peer + ": handshake not finished in time"));
      continue;
    }
    if (!l->out.empty()) {
      IoResult r = FlushLink(l);
      if (r == IoResult::kError || r == IoResult::kClosed) {
        drop(Status::Unavailable("connection to " + l->peer + " failed while sending the handshake"));
        continue;
      }
      if (l->stage == Link::Stage::kClosing && l->out.empty()) {
        drop(Status::Ok());
        continue;
      }
    }
    switch (l->stage) {
      case Link::Stage::kClosing:
        break;
      case Link::Stage::kClientConnecting: {
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, 0) <= 0) break;
        int err = 0;
        socklen_t elen = sizeof(err);
        (void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
        if (err != 0) {
          drop(Status::Unavailable("connect to " + l->peer + ": " + std::strerror(err)));
          break;
        }
        any = true;
        l->stage = Link::Stage::kClientWantChallenge;
        if (FlushLink(l) == IoResult::kError) {
          drop(Status::Unavailable("connect to " + l->peer + ": the connection failed"));
          break;
        }
        [[fallthrough]];
      }
      case Link::Stage::kClientWantChallenge:
      case Link::Stage::kClientWantVerdict:
      case Link::Stage::kServerWantHello:
      case Link::Stage::kServerWantProof: {
        Kind kind = l->stage == Link::Stage::kClientWantChallenge ? Kind::kChallenge
                    : l->stage == Link::Stage::kClientWantVerdict ? Kind::kVerdict
                    : l->stage == Link::Stage::kServerWantHello   ? Kind::kHello
                                                                  : Kind::kProof;
        bool complete = false;
        auto r = ReadMessage(l, kind, &complete);
        if (!r.ok()) {
          drop(Status::InvalidArgument("connect to " + l->peer + ": " + r.status().message()));
          break;
        }
        if (*r == IoResult::kClosed || *r == IoResult::kError) {
          drop(Status::Unavailable("connect to " + l->peer + ": the peer closed the connection during the handshake"));
          break;
        }
        if (!complete) break;
        any = true;
        std::vector<uint8_t> msg = std::move(l->in);
        l->in.clear();
        if (kind == Kind::kHello) {
          auto hello = handshake::DecodeHello(msg);
          if (!hello.ok()) {
            drop(hello.status());
            break;
          }
          l->hello = *hello;
          if (!handshake::RandomBytes(l->server_nonce).ok()) {
            drop(Status::Internal("no random nonce"));
            break;
          }
          l->out = handshake::EncodeChallenge(l->server_nonce);
          l->stage = Link::Stage::kServerWantProof;
          (void)FlushLink(l);
        } else if (kind == Kind::kChallenge) {
          Endpoint* e = ConnectingEndpoint(this, l);
          auto nonce = handshake::DecodeChallenge(msg);
          if (e == nullptr || !nonce.ok()) {
            drop(nonce.ok() ? Status::Unavailable("connect abandoned") : nonce.status());
            break;
          }
          l->server_nonce = *nonce;
          handshake::Signed proof;
          proof.endpoint_id = e->id;
          proof.address = own_address;
          proof.proof = handshake::ComputeProof(l->key, handshake::kClientLabel, l->hello, l->server_nonce, e->id,
                                                own_address);
          l->out = handshake::EncodeProof(proof);
          l->stage = Link::Stage::kClientWantVerdict;
          (void)FlushLink(l);
        } else if (kind == Kind::kProof) {
          auto proof = handshake::DecodeProof(msg);
          if (!proof.ok()) {
            drop(proof.status());
            break;
          }
          // The key this peer must have used, by the role it claims.
          const auto& secret = credentials.cluster_secret;
          std::string refusal;
          std::vector<uint8_t> key;
          if (secret.empty()) {
            if (l->hello.role != Role::kOpen) refusal = "this node has no cluster secret; connect without credentials";
          } else if (l->hello.role == Role::kOpen) {
            refusal = "this node requires a cluster secret or a tenant credential";
          } else {
            key = l->hello.role == Role::kCluster ? secret : DeriveTenantKey(secret, l->hello.tenant);
          }
          if (refusal.empty() &&
              !handshake::ProofsEqual(proof->proof, handshake::ComputeProof(key, handshake::kClientLabel, l->hello,
                                                                            l->server_nonce, proof->endpoint_id,
                                                                            proof->address))) {
            refusal = "authentication failed: wrong cluster secret or tenant credential";
          }
          Endpoint* e = nullptr;
          if (refusal.empty()) {
            e = NewEndpoint(/*accepted=*/true);
            e->peer = l->peer;
            Status created = CreateUcpEndpoint(e, proof->address);
            if (!created.ok()) {
              refusal = "cannot reach the connecting worker: " + created.message();
              Erase(e->id);
              e = nullptr;
            }
          }
          handshake::Verdict v;
          if (!refusal.empty()) {
            v.code = StatusCodeToWire(Status::Code::kPermissionDenied);
            v.text = refusal;
            l->out = handshake::EncodeVerdict(v);
            l->stage = Link::Stage::kClosing;
            if (FlushLink(l) != IoResult::kWouldBlock) drop(Status::Ok());
            break;
          }
          e->remote_id = proof->endpoint_id;
          e->identity.kind = l->hello.role == Role::kCluster ? PeerKind::kCluster
                             : l->hello.role == Role::kTenant ? PeerKind::kTenant
                                                              : PeerKind::kOpen;
          e->identity.tenant = l->hello.tenant;
          e->state = EpState::kReady;
          e->announced = true;
          e->link_fd = fd;
          l->ep = e->id;
          l->key = std::move(key);
          v.accepted.endpoint_id = e->id;
          v.accepted.address = own_address;
          v.accepted.proof = handshake::ComputeProof(l->key, handshake::kServerLabel, l->hello, l->server_nonce,
                                                     e->id, own_address);
          l->out = handshake::EncodeVerdict(v);
          l->stage = Link::Stage::kEstablished;
          if (FlushLink(l) == IoResult::kError) {
            drop(Status::Unavailable("peer " + l->peer + " went away during the handshake"));
            break;
          }
          if (on_accept && !destroying) {
            AcceptHandler handler = on_accept;
            std::string peer = e->peer;
            EndpointId id = e->id;
            ++callback_depth;
            handler(id, peer);
            --callback_depth;
          }
        } else {  // kVerdict
          Endpoint* e = ConnectingEndpoint(this, l);
          auto v = handshake::DecodeVerdict(msg);
          if (e == nullptr || !v.ok()) {
            drop(v.ok() ? Status::Unavailable("connect abandoned") : v.status());
            break;
          }
          if (v->code != 0) {
            Status refused = StatusFromWire(v->code, l->peer + " refused the connection: " + v->text);
            if (refused.ok()) refused = Status::Internal("refused with code 0");
            drop(refused);
            break;
          }
          const auto& a = v->accepted;
          if (!handshake::ProofsEqual(a.proof, handshake::ComputeProof(l->key, handshake::kServerLabel, l->hello,
                                                                        l->server_nonce, a.endpoint_id, a.address))) {
            drop(Status::PermissionDenied(l->peer + " did not prove that it knows the cluster secret"));
            break;
          }
          Status created = CreateUcpEndpoint(e, a.address);
          if (!created.ok()) {
            drop(created);
            break;
          }
          e->remote_id = a.endpoint_id;
          e->identity.kind = l->key.empty() ? PeerKind::kOpen : PeerKind::kCluster;
          e->state = EpState::kReady;
          l->stage = Link::Stage::kEstablished;
        }
        break;
      }
      case Link::Stage::kEstablished: {
        // The link only tells that the peer is gone: EOF, an error, or bytes
        // it has no business sending.
        uint8_t byte = 0;
        ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          drop(Status::Unavailable("peer " + l->peer + " closed the connection or died"));
        } else if (n > 0) {
          drop(Status::Unavailable("peer " + l->peer + " sent bytes after the handshake; connection closed"));
        }
        break;
      }
    }
  }
  bool handshaking = false;
  for (const auto& [fd, l] : links) handshaking |= l->stage != Link::Stage::kEstablished;
  next_link_check = Clock::now() + (handshaking ? Duration(kLinkCheckIntervalBusy) : Duration(kLinkCheckIntervalIdle));
  return any;
}

}  // namespace pulse::net
