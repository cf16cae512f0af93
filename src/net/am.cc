// Active messages: handler table, sending, eager and rendezvous receipt,
// per-endpoint delivery order.
#include <algorithm>
#include <cstring>

#include "net/internal.h"

namespace pulse::net {
namespace {

void SendDone(void* request, ucs_status_t /*status*/, void* user_data) {
  // A failed send shows up as an endpoint failure through the error handler.
  auto* op = static_cast<Op*>(user_data);
  Worker::Impl* m = op->impl;
  delete op;
  FinishRequest(m, request);
}

void RecvDone(void* request, ucs_status_t status, size_t /*length*/, void* user_data) {
  auto* op = static_cast<Op*>(user_data);
  Worker::Impl* m = op->impl;
  EndpointId id = op->ep;
  op->inbound->ready = true;
  op->inbound->failed = status != UCS_OK;
  bool discard = op->inbound->discard;
  delete op;
  FinishRequest(m, request);
  if (!discard && !m->destroying) m->DrainInbound(id);
}

// Common receive path of user (kUserAmId) and control (kCtlAmId) messages.
ucs_status_t Receive(Worker::Impl* m, bool control, const void* header, size_t header_length,
                     void* data, size_t length, const ucp_am_recv_param_t* param) {
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  WireHeader h;
  const bool decoded = WireHeader::Decode(header, header_length, &h);
  Endpoint* e = nullptr;
  if (decoded) e = m->Find(h.dest);
  // An endpoint we are connecting may get messages before its handshake has
  // finished here (the listener was ready first): they are held in order
  // (DrainInbound delivers once it is ready).
  const bool usable = e != nullptr && (e->state == EpState::kReady ||
                                       (e->state == EpState::kConnecting && !e->accepted));
  if (!usable || m->destroying) {
    ++m->counters.messages_dropped;
    if (!rndv) return UCS_OK;
    // Still receive it (into a throw-away buffer) so the sender completes.
    auto in = std::make_shared<Inbound>();
    in->length = length;
    in->rndv_desc = data;
    in->discard = true;
    m->rndv_to_start.emplace_back(kInvalidEndpoint, std::move(in));
    return UCS_INPROGRESS;
  }
  if (rndv) {
    auto in = std::make_shared<Inbound>();
    in->msg_id = h.msg_id;
    in->control = control;
    in->length = length;
    in->rndv_desc = data;
    e->inbound.push_back(in);
    m->rndv_to_start.emplace_back(e->id, std::move(in));
    return UCS_INPROGRESS;
  }
  if (e->inbound.empty() && e->state == EpState::kReady) {
    m->Deliver(e->id, control, h.msg_id, static_cast<const uint8_t*>(data), length);
    return UCS_OK;
  }
  // An earlier rendezvous message is still arriving: hold this one.
  auto in = std::make_shared<Inbound>();
  in->msg_id = h.msg_id;
  in->control = control;
  in->length = length;
  in->data.reset(new uint8_t[std::max<size_t>(length, 1)]);
  if (length != 0) std::memcpy(in->data.get(), data, length);
  in->ready = true;
  e->inbound.push_back(std::move(in));
  return UCS_OK;
}

ucs_status_t OnUserAm(void* arg, const void* header, size_t header_length, void* data,
                      size_t length, const ucp_am_recv_param_t* param) {
  return Receive(static_cast<Worker::Impl*>(arg), false, header, header_length, data, length,
                 param);
}

ucs_status_t OnCtlAm(void* arg, const void* header, size_t header_length, void* data,
                     size_t length, const ucp_am_recv_param_t* param) {
  return Receive(static_cast<Worker::Impl*>(arg), true, header, header_length, data, length,
                 param);
}

Status SetAmHandler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                 UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.flags = UCP_AM_FLAG_WHOLE_MSG;
  p.cb = cb;
  p.arg = arg;
  ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &p);
  return FromUcs(st, "ucp_worker_set_am_recv_handler");
}

}  // namespace

Status Worker::Impl::InstallAmHandlers() {
  PULSE_RETURN_IF_ERROR(SetAmHandler(worker, kUserAmId, OnUserAm, this));
  return SetAmHandler(worker, kCtlAmId, OnCtlAm, this);
}

void Worker::Impl::Deliver(EndpointId from, bool control, uint16_t msg_id,
                           const uint8_t* data, size_t length) {
  if (control) {
    HandleControlData(from, msg_id, data, length);
    return;
  }
  std::shared_ptr<MessageHandler> handler;
  if (msg_id < handlers.size()) handler = handlers[msg_id];
  if (!handler) {
    ++counters.messages_dropped;
    return;
  }
  ++counters.messages_received;
  counters.bytes_received += length;
  ++callback_depth;
  (*handler)(from, std::span<const uint8_t>(data, length));
  --callback_depth;
}

void Worker::Impl::DrainInbound(EndpointId id) {
  for (;;) {
    Endpoint* e = Find(id);
    if (e == nullptr || e->state != EpState::kReady || e->inbound.empty() || !e->inbound.front()->ready) return;
    std::shared_ptr<Inbound> in = std::move(e->inbound.front());
    e->inbound.pop_front();
    if (in->failed) {
      ++counters.messages_dropped;
      continue;
    }
    Deliver(id, in->control, in->msg_id, in->data.get(), in->length);
  }
}

void Worker::Impl::StartRndvReceives() {
  std::vector<std::pair<EndpointId, std::shared_ptr<Inbound>>> list;
  list.swap(rndv_to_start);
  for (auto& [id, in] : list) {
    in->data.reset(new uint8_t[std::max<size_t>(in->length, 1)]);
    auto* op = new Op();
    op->kind = Op::kRecv;
    op->impl = this;
    op->ep = id;
    op->inbound = in;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.recv_am = RecvDone;
    p.user_data = op;
    ++inflight;
    void* req = ucp_am_recv_data_nbx(worker, in->rndv_desc, in->data.get(), in->length, &p);
    in->rndv_desc = nullptr;
    if (UCS_PTR_IS_PTR(req)) continue;  // RecvDone will run
    --inflight;
    in->ready = true;
    in->failed = UCS_PTR_IS_ERR(req);
    delete op;
    if (!in->discard) DrainInbound(id);
  }
}

Status Worker::Impl::SubmitSend(Endpoint* e, unsigned am_id, Op* op, uint32_t flags) {
  op->kind = Op::kSend;
  op->impl = this;
  op->ep = e->id;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = SendDone;
  p.user_data = op;
  p.flags = flags;
  ++inflight;
  void* req = ucp_am_send_nbx(e->ep, am_id, op->header, kHeaderSize, op->payload.data(),
                              op->payload.size(), &p);
  if (UCS_PTR_IS_PTR(req)) return Status::Ok();  // SendDone frees op
  --inflight;
  delete op;
  if (UCS_PTR_IS_ERR(req)) {
    return FromUcs(UCS_PTR_STATUS(req), "send to " + e->peer);
  }
  return Status::Ok();
}

void Worker::SetHandler(uint16_t msg_id, MessageHandler handler) {
  Impl& m = *impl_;
  if (msg_id >= m.handlers.size()) m.handlers.resize(size_t{msg_id} + 1);
  m.handlers[msg_id] = handler ? std::make_shared<MessageHandler>(std::move(handler)) : nullptr;
}

namespace {

Status CheckSendable(Worker::Impl& m, EndpointId id, Endpoint** out) {
  Endpoint* e = m.Find(id);
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(id));
  if (e->state != EpState::kReady || e->ep == nullptr) {
    return Status::Unavailable("endpoint " + std::to_string(id) + " to " + e->peer +
                               " has failed: " + e->failure.ToString());
  }
  *out = e;
  return Status::Ok();
}

}  // namespace

Status Worker::Send(EndpointId id, uint16_t msg_id, std::span<const uint8_t> payload) {
  Impl& m = *impl_;
  Endpoint* e = nullptr;
  PULSE_RETURN_IF_ERROR(CheckSendable(m, id, &e));
  if (m.FaultsApply(msg_id))
    return m.SendWithFaults(e, msg_id, std::vector<uint8_t>(payload.begin(), payload.end()));
  uint8_t header[kHeaderSize];
  WireHeader{e->remote_id, msg_id}.Encode(header);
  // Small messages usually go at once, with no copy of ours.
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
  p.flags = 0;
  void* req = ucp_am_send_nbx(e->ep, kUserAmId, header, kHeaderSize, payload.data(),
                              payload.size(), &p);
  if (req == nullptr) {
    ++m.counters.messages_sent;
    m.counters.bytes_sent += payload.size();
    m.NoteActivity();
    return Status::Ok();
  }
  if (UCS_PTR_IS_PTR(req)) {
    // UCX broke FORCE_IMM_CMPL's contract (never seen with 1.13): the request
    // refers to the caller's bytes.  Outside handlers wait for it (bounded);
    // inside one we must not progress, and the bytes outlive the handler
    // only if the caller's do.
    if (m.callback_depth == 0) {
      (void)m.RunUntil([req] { return ucp_request_check_status(req) != UCS_INPROGRESS; },
                       DeadlineAfter(std::chrono::seconds(10)));
    }
    ucp_request_free(req);
    ++m.counters.messages_sent;
    m.counters.bytes_sent += payload.size();
    m.NoteActivity();
    return Status::Ok();
  }
  if (UCS_PTR_STATUS(req) != UCS_ERR_NO_RESOURCE) {
    return FromUcs(UCS_PTR_STATUS(req), "send to " + e->peer);
  }
  return Send(id, msg_id, std::vector<uint8_t>(payload.begin(), payload.end()));
}

Status Worker::Send(EndpointId id, uint16_t msg_id, std::vector<uint8_t>&& payload) {
  Impl& m = *impl_;
  Endpoint* e = nullptr;
  PULSE_RETURN_IF_ERROR(CheckSendable(m, id, &e));
  if (m.FaultsApply(msg_id)) return m.SendWithFaults(e, msg_id, std::move(payload));
  const size_t bytes = payload.size();
  PULSE_RETURN_IF_ERROR(m.SendNow(e, msg_id, std::move(payload)));
  ++m.counters.messages_sent;
  m.counters.bytes_sent += bytes;
  return Status::Ok();
}

Status Worker::Impl::SendNow(Endpoint* e, uint16_t msg_id, std::vector<uint8_t>&& payload,
                             unsigned am_id) {
  auto* op = new Op();
  WireHeader{e->remote_id, msg_id}.Encode(op->header);
  op->payload = std::move(payload);
  PULSE_RETURN_IF_ERROR(SubmitSend(e, am_id, op, 0));
  NoteActivity();
  return Status::Ok();
}

}  // namespace pulse::net
