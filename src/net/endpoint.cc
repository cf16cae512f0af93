// Endpoints: their records, failure reporting and closing (the handshake
// that creates them is in link.cc).
#include <string>

#include "net/internal.h"

namespace pulse::net {

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
  CloseLink(it->second.get());
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
      ForceClose(e->ep);
      e->ep = nullptr;
    }
    CloseLink(e);
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

Status Worker::Close(EndpointId id, Duration timeout) {
  Impl& m = *impl_;
  Endpoint* e = m.Find(id);
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(id));
  e->closing = true;
  if (m.callback_depth > 0) {
    // Inside a UCX callback: close once progress has returned.
    if (e->ep != nullptr) {
      m.deferred_closes.push_back(e->ep);
      e->ep = nullptr;
    }
    m.CloseLink(e);
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
    m.ForceClose(e->ep);
    e->ep = nullptr;
  }
  m.CloseLink(e);
  m.Erase(id);
  return Status::Ok();
}

bool Worker::IsConnected(EndpointId id) const {
  Endpoint* e = impl_->Find(id);
  return e != nullptr && e->state == EpState::kReady;
}

Result<PeerIdentity> Worker::PeerOf(EndpointId id) const {
  Endpoint* e = impl_->Find(id);
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(id));
  return e->identity;
}

void Worker::SetAcceptHandler(AcceptHandler handler) { impl_->on_accept = std::move(handler); }

void Worker::SetDisconnectHandler(DisconnectHandler handler) {
  impl_->on_disconnect = std::move(handler);
}

}  // namespace pulse::net
