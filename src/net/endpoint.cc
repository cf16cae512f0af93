// Connections: listening, connecting (with a hello handshake), failure
// reporting and closing.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <string>

#include "net/internal.h"

namespace pulse::net {
namespace {

// Resolves host:port to a socket address.  An empty host means "any".
Status Resolve(const std::string& host, uint16_t port, bool passive, sockaddr_storage* out,
               socklen_t* out_len) {
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
  if (sa.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_port);
  }
  return 0;
}

void OnEpError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* e = static_cast<Endpoint*>(arg);
  Status why = status == UCS_ERR_CONNECTION_RESET
                   ? Status::Unavailable("peer " + e->peer + " closed the connection or died")
                   : FromUcs(status, "endpoint to " + e->peer);
  e->impl->MarkFailed(e, std::move(why));
}

void OnConnRequest(ucp_conn_request_h request, void* arg) {
  auto* m = static_cast<Worker::Impl*>(arg);
  if (m->destroying) {
    ucp_listener_reject(m->listener, request);
    return;
  }
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  std::string peer = "?";
  if (ucp_conn_request_query(request, &attr) == UCS_OK) peer = AddressText(attr.client_address);

  Endpoint* e = m->NewEndpoint(/*accepted=*/true);
  e->peer = peer;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = OnEpError;
  params.err_handler.arg = e;
  ucp_ep_h ep = nullptr;
  if (ucp_ep_create(m->worker, &params, &ep) != UCS_OK) {
    m->Erase(e->id);
    return;
  }
  e->ep = ep;
  m->accepted_by_handle[ep] = e;
}

}  // namespace

Endpoint* Worker::Impl::Find(EndpointId id) {
  auto it = eps.find(id);
  return it == eps.end() ? nullptr : it->second.get();
}

Endpoint* Worker::Impl::NewEndpoint(bool accepted) {
  auto e = std::make_unique<Endpoint>();
  e->id = next_id++;
  e->accepted = accepted;
  e->impl = this;
  Endpoint* raw = e.get();
  eps.emplace(raw->id, std::move(e));
  return raw;
}

void Worker::Impl::Erase(EndpointId id) {
  auto it = eps.find(id);
  if (it == eps.end()) return;
  if (it->second->ep != nullptr) accepted_by_handle.erase(it->second->ep);
  graveyard.push_back(std::move(it->second));
  eps.erase(it);
}

void Worker::Impl::MarkFailed(Endpoint* e, Status why) {
  if (e->state == EpState::kFailed) return;
  e->state = EpState::kFailed;
  e->failure = std::move(why);
  failed.push_back(e->id);
}

void Worker::Impl::ForceClose(ucp_ep_h ep) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* req = ucp_ep_close_nbx(ep, &param);
  if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
}

void Worker::Impl::GracefulClose(ucp_ep_h ep) {
  ucp_request_param_t param{};
  void* req = ucp_ep_close_nbx(ep, &param);
  if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
}

void Worker::Impl::ReapCloses() {
  for (size_t i = 0; i < closing.size();) {
    if (ucp_request_check_status(closing[i]) != UCS_INPROGRESS) {
      ucp_request_free(closing[i]);
      closing[i] = closing.back();
      closing.pop_back();
    } else {
      ++i;
    }
  }
  if (closing.empty()) graveyard.clear();
}

void Worker::Impl::FailNow(Endpoint* e, Status why) {
  MarkFailed(e, std::move(why));
  ProcessFailures();
}

void Worker::Impl::ProcessFailures() {
  std::vector<EndpointId> ids;
  ids.swap(failed);
  for (EndpointId id : ids) {
    Endpoint* e = Find(id);
    if (e == nullptr) continue;
    if (e->ep != nullptr) {
      accepted_by_handle.erase(e->ep);
      ForceClose(e->ep);
      e->ep = nullptr;
    }
    for (const auto& in : e->inbound) {
      if (!in->discard) ++counters.messages_dropped;
    }
    e->inbound.clear();
    FailSwOps(id, e->failure);
    ++counters.endpoints_failed;
    if (!e->announced) {
      // Nobody knows this id: a connection that never completed.  Connect()
      // erases its own; accepted ones go here.
      if (e->accepted) Erase(id);
      continue;
    }
    if (e->closing || destroying || !on_disconnect) continue;
    DisconnectHandler handler = on_disconnect;  // the handler may replace itself
    Status why = e->failure;
    ++callback_depth;
    handler(id, why);
    --callback_depth;
  }
}

Status Worker::Impl::SendControl(Endpoint* e, uint16_t type, uint64_t value, bool reply) {
  auto* op = new Op();
  WireHeader{e->remote_id, type}.Encode(op->header);
  op->payload.resize(sizeof(value));
  std::memcpy(op->payload.data(), &value, sizeof(value));
  return SubmitSend(e, kCtlAmId, op, reply ? UCP_AM_SEND_FLAG_REPLY : 0);
}

void Worker::Impl::OnControl(const WireHeader& h, const void* data, size_t length,
                             const ucp_am_recv_param_t* param) {
  if (length != sizeof(uint64_t) || (h.msg_id != kCtlHello && h.msg_id != kCtlHelloAck)) {
    ++counters.messages_dropped;
    return;
  }
  uint64_t value = 0;
  std::memcpy(&value, data, sizeof(value));
  if (h.msg_id == kCtlHello) {
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) return;
    auto it = accepted_by_handle.find(param->reply_ep);
    if (it == accepted_by_handle.end()) return;
    Endpoint* e = it->second;
    accepted_by_handle.erase(it);
    if (e->state != EpState::kConnecting) return;
    e->remote_id = value;
    e->state = EpState::kReady;
    e->announced = true;
    if (!SendControl(e, kCtlHelloAck, e->id, /*reply=*/false).ok()) return;
    if (on_accept && !destroying) {
      AcceptHandler handler = on_accept;
      std::string peer = e->peer;
      EndpointId id = e->id;
      ++callback_depth;
      handler(id, peer);
      --callback_depth;
    }
  } else if (h.msg_id == kCtlHelloAck) {
    Endpoint* e = Find(h.dest);
    if (e == nullptr || e->accepted || e->state != EpState::kConnecting) return;
    e->remote_id = value;
    e->state = EpState::kReady;
  }
}

Result<uint16_t> Worker::Listen(const std::string& host, uint16_t port) {
  Impl& m = *impl_;
  if (m.listener != nullptr) return Status::InvalidArgument("worker is already listening");
  sockaddr_storage sa{};
  socklen_t len = 0;
  PULSE_RETURN_IF_ERROR(Resolve(host, port, /*passive=*/true, &sa, &len));
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&sa);
  params.sockaddr.addrlen = len;
  params.conn_handler.cb = OnConnRequest;
  params.conn_handler.arg = &m;
  ucs_status_t st = ucp_listener_create(m.worker, &params, &m.listener);
  if (st != UCS_OK) {
    m.listener = nullptr;
    Status s = FromUcs(st, "listen on " + host + ":" + std::to_string(port));
    return st == UCS_ERR_BUSY ? Status::IoError(s.message() + " (address in use)") : s;
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(m.listener, &attr);
  if (st != UCS_OK) {
    StopListening();
    return FromUcs(st, "ucp_listener_query");
  }
  return PortOf(attr.sockaddr);
}

void Worker::StopListening() {
  if (impl_->listener != nullptr) {
    ucp_listener_destroy(impl_->listener);
    impl_->listener = nullptr;
  }
}

Result<EndpointId> Worker::Connect(const std::string& host, uint16_t port, Duration timeout) {
  Impl& m = *impl_;
  PULSE_RETURN_IF_ERROR(m.CheckBlockingAllowed("Connect"));
  Clock::time_point deadline = DeadlineAfter(timeout);
  sockaddr_storage sa{};
  socklen_t len = 0;
  PULSE_RETURN_IF_ERROR(Resolve(host, port, /*passive=*/false, &sa, &len));

  Endpoint* e = m.NewEndpoint(/*accepted=*/false);
  e->peer = host + ":" + std::to_string(port);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&sa);
  params.sockaddr.addrlen = len;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = OnEpError;
  params.err_handler.arg = e;
  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(m.worker, &params, &ep);
  if (st != UCS_OK) {
    EndpointId id = e->id;
    m.Erase(id);
    return FromUcs(st, "connect to " + host + ":" + std::to_string(port));
  }
  e->ep = ep;
  Status s = m.SendControl(e, kCtlHello, e->id, /*reply=*/true);
  if (s.ok()) {
    s = m.RunUntil([e] { return e->state != EpState::kConnecting; }, deadline);
  }
  if (s.ok() && e->state == EpState::kReady) {
    e->announced = true;
    return e->id;
  }
  Status why = e->state == EpState::kFailed
                   ? e->failure
                   : (s.ok() || s.code() == Status::Code::kTimeout)
                         ? Status::Timeout("connect to " + e->peer + ": no answer within " +
                                           MicrosText(timeout))
                         : s;
  if (e->ep != nullptr) {
    m.ForceClose(e->ep);
    e->ep = nullptr;
  }
  m.Erase(e->id);
  return why;
}

Status Worker::Close(EndpointId id, Duration timeout) {
  Impl& m = *impl_;
  Endpoint* e = m.Find(id);
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(id));
  e->closing = true;
  if (m.callback_depth > 0) {
    // Inside a UCX callback: close once progress has returned.
    if (e->ep != nullptr) {
      m.accepted_by_handle.erase(e->ep);
      m.deferred_closes.push_back(e->ep);
      e->ep = nullptr;
    }
    m.FailSwOps(id, Status::Unavailable("endpoint " + std::to_string(id) + " closed"));
    m.Erase(id);
    return Status::Ok();
  }
  if (e->state == EpState::kReady && e->ep != nullptr && timeout > Duration::zero()) {
    Status immediate;
    Op* op = m.StartFlush(e, &immediate);
    if (op != nullptr) {
      (void)m.RunUntil([op] { return op->finished; }, DeadlineAfter(timeout));
      m.ReleaseOps({op}, Duration::zero());
    }
  }
  e = m.Find(id);  // a handler may have closed it meanwhile
  if (e == nullptr) return Status::Ok();
  m.FailSwOps(id, Status::Unavailable("endpoint " + std::to_string(id) + " closed"));
  if (e->ep != nullptr) {
    m.accepted_by_handle.erase(e->ep);
    m.ForceClose(e->ep);
    e->ep = nullptr;
  }
  m.Erase(id);
  return Status::Ok();
}

bool Worker::IsConnected(EndpointId id) const {
  Endpoint* e = impl_->Find(id);
  return e != nullptr && e->state == EpState::kReady;
}

void Worker::SetAcceptHandler(AcceptHandler handler) { impl_->on_accept = std::move(handler); }

void Worker::SetDisconnectHandler(DisconnectHandler handler) {
  impl_->on_disconnect = std::move(handler);
}

}  // namespace pulse::net
