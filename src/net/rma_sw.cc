// RmaPath::kMessages: Get/Put as request/reply active messages served by the
// peer's worker, checked against the peer's registered regions.  Used where
// UCX has no RMA lane that works without the peer's CPU (TCP, shared memory
// for ordinary heap memory), because UCX 1.13's own emulation aborts the
// serving process when the requester fails mid-operation.
#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>

#include "net/internal.h"

namespace pulse::net {
namespace {

enum RmaCode : uint8_t { kRmaOk = 0, kRmaNoRegion = 1, kRmaOutOfRange = 2, kRmaMalformed = 3 };

uint64_t Load64(const uint8_t* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return x;
}

void Store64(uint8_t* p, uint64_t x) { std::memcpy(p, &x, 8); }

Status CodeToStatus(uint8_t code, const std::string& peer) {
  switch (code) {
    case kRmaOk:
      return Status::Ok();
    case kRmaNoRegion:
      return Status::PermissionDenied("region is not registered at " + peer);
    case kRmaOutOfRange:
      return Status::OutOfRange("range is outside the region at " + peer);
    default:
      return Status::Internal("malformed one-sided request rejected by " + peer);
  }
}

// True if a "lane[...]" line of ucp_ep_print_info carries an "rma#" lane on
// a transport that reaches remote memory without the peer's CPU.
bool HasOffloadedRmaLane(const std::string& info) {
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("lane[") == std::string::npos) continue;
    std::istringstream tokens(line);
    std::string t, transport;
    bool rma = false;
    while (tokens >> t) {
      size_t colon = t.find(':');
      size_t slash = t.find('/');
      if (transport.empty() && colon != std::string::npos && colon > 0 &&
          slash != std::string::npos && colon < slash &&
          t.find_first_not_of("0123456789") == colon) {
        transport = t.substr(colon + 1, slash - colon - 1);
      }
      if (t.rfind("rma#", 0) == 0) rma = true;
    }
    if (rma && !transport.empty() && transport != "tcp" && transport != "sysv" &&
        transport != "posix" && transport != "self") {
      return true;
    }
  }
  return false;
}

// Checks [addr, addr+length) against region `id`; returns its bytes.
uint8_t Lookup(const RegionTable& table, uint64_t id, uint64_t addr, uint64_t length,
               uint8_t** out) {
  auto it = table.regions.find(id);
  if (it == table.regions.end()) return kRmaNoRegion;
  uint64_t base = reinterpret_cast<uint64_t>(it->second.base);
  uint64_t size = it->second.length;
  if (addr < base || length > size || addr - base > size - length) return kRmaOutOfRange;
  *out = it->second.base + (addr - base);
  return kRmaOk;
}

}  // namespace

bool Worker::Impl::UseUcxRma(Endpoint* e) {
  if (FaultsOneSided()) return false;  // UCX's own RMA cannot be faulted
  switch (options.rma_path) {
    case RmaPath::kUcx:
      return true;
    case RmaPath::kMessages:
      return false;
    case RmaPath::kAuto:
      break;
  }
  if (e->native_rma < 0) e->native_rma = HasOffloadedRmaLane(EndpointInfo(e->ep)) ? 1 : 0;
  return e->native_rma == 1;
}

// Requests: read  = id, region id, address, length;
//           write = id, floor, region id, address, data, where every
//           request id of this endpoint below `floor` is done here (the
//           peer forgets those writes).
Status Worker::Impl::StartSwRma(Endpoint* e, const RemoteKey& rkey, uint64_t addr, Op* op) {
  op->sw_id = next_sw_id++;
  std::vector<uint8_t>& msg = op->sw_request;
  if (op->is_get) {
    op->sw_type = kCtlReadReq;
    msg.resize(32);
    Store64(&msg[0], op->sw_id);
    Store64(&msg[8], rkey.region_id_);
    Store64(&msg[16], addr);
    Store64(&msg[24], op->length);
  } else {
    op->sw_type = kCtlWriteReq;
    msg.resize(32 + op->length);
    Store64(&msg[0], op->sw_id);
    Store64(&msg[16], rkey.region_id_);
    Store64(&msg[24], addr);
    if (op->length != 0) std::memcpy(&msg[32], op->local, op->length);
  }
  PULSE_RETURN_IF_ERROR(SendSwRequest(e, op));
  // Re-sent after rma_retransmit_us, doubling up to a second, until the
  // waiter gives up or the endpoint fails; 0: never re-sent.
  RetryPolicy policy;
  if (options.rma_retransmit_us > 0)
    policy = RetryPolicy::Doubling(std::chrono::microseconds(options.rma_retransmit_us), std::chrono::seconds(1));
  sw_ops.Track(op->sw_id, op, policy, [this, op](Result<bool> r) { CompleteOp(op, r.ok() ? Status::Ok() : r.status()); });
  ++e->sw_pending;
  return Status::Ok();
}

Status Worker::Impl::SendSwRequest(Endpoint* e, Op* op) {
  std::vector<uint8_t> msg = op->sw_request;
  if (op->sw_type == kCtlWriteReq) {
    uint64_t floor = op->sw_id;
    sw_ops.ForEach([&](uint64_t id, Op* other) {
      if (other->ep == e->id && id < floor) floor = id;
    });
    Store64(&msg[8], floor);
  }
  if (FaultsOneSided()) return SendWithFaults(e, op->sw_type, std::move(msg), kCtlAmId);
  return SendNow(e, op->sw_type, std::move(msg), kCtlAmId);
}

void Worker::Impl::ResendSwOp(uint64_t id, Op* op) {
  Endpoint* e = Find(op->ep);
  if (e == nullptr || e->state != EpState::kReady || e->ep == nullptr) {
    sw_ops.Hold(id);  // FailSwOps completes it
    return;
  }
  // A failed send fails the endpoint, and with it this op.
  (void)SendSwRequest(e, op);
  ++counters.rma_retransmissions;
}

bool Worker::Impl::RetransmitSwOps() {
  if (options.rma_retransmit_us == 0) return false;
  const uint64_t before = counters.rma_retransmissions;
  sw_ops.Service();
  return counters.rma_retransmissions != before;
}

Clock::time_point Worker::Impl::NextSwResend() const { return sw_ops.NextDeadline(); }

void Worker::Impl::HandleControlData(EndpointId from, uint16_t type, const uint8_t* data,
                                     size_t length) {
  Endpoint* e = Find(from);
  if (e == nullptr || e->state != EpState::kReady) return;
  switch (type) {
    case kCtlReadReq:
    case kCtlWriteReq: {
      const bool read = type == kCtlReadReq;
      if (length < 32 || (read && length != 32)) {
        ++counters.messages_dropped;
        return;
      }
      const uint64_t id = Load64(data);
      const uint64_t region = Load64(data + (read ? 8 : 16));
      const uint64_t addr = Load64(data + (read ? 16 : 24));
      const uint64_t n = read ? Load64(data + 24) : length - 32;
      bool again = false;  // a write applied here before
      if (!read) {
        const uint64_t floor = Load64(data + 8);
        if (floor > e->rma_floor) {
          e->rma_floor = floor;
          e->rma_applied.erase(e->rma_applied.begin(), e->rma_applied.lower_bound(floor));
        }
        again = id < e->rma_floor || e->rma_applied.count(id) != 0;
      }
      uint8_t* mem = nullptr;
      const uint8_t code = Lookup(*regions, region, addr, n, &mem);
      std::vector<uint8_t> reply(9 + (read && code == kRmaOk ? n : 0));
      Store64(&reply[0], id);
      reply[8] = code;
      if (code == kRmaOk && read && n != 0) std::memcpy(&reply[9], mem, n);
      if (code == kRmaOk && !read) {
        if (again) {
          ++counters.rma_duplicates;
        } else {
          if (n != 0) std::memcpy(mem, data + 32, n);
          e->rma_applied.insert(id);
        }
      }
      const uint16_t reply_type = read ? uint16_t{kCtlReadRep} : uint16_t{kCtlWriteAck};
      // A failure to reply means the requester is gone; nothing to do.
      if (FaultsOneSided()) {
        (void)SendWithFaults(e, reply_type, std::move(reply), kCtlAmId);
      } else {
        (void)SendNow(e, reply_type, std::move(reply), kCtlAmId);
      }
      return;
    }
    case kCtlReadRep:
    case kCtlWriteAck: {
      if (length < 9) {
        ++counters.messages_dropped;
        return;
      }
      const uint64_t id = Load64(data);
      Op** found = sw_ops.OnAnswer(id);
      if (found == nullptr || (*found)->ep != from || (*found)->is_get != (type == kCtlReadRep)) {
        return;  // a late reply to an operation that was given up
      }
      Op* op = *found;
      if (e->sw_pending > 0) --e->sw_pending;
      Status s = CodeToStatus(data[8], e->peer);
      if (s.ok() && op->is_get) {
        if (length - 9 != op->length) {
          s = Status::Internal("read reply of " + std::to_string(length - 9) + " bytes, expected " +
                               std::to_string(op->length));
        } else if (op->length != 0) {
          std::memcpy(op->local, data + 9, op->length);
        }
      }
      sw_ops.Complete(id, s.ok() ? Result<bool>(true) : Result<bool>(std::move(s)));
      sw_ops.RunReady();
      return;
    }
    default:
      ++counters.messages_dropped;
      return;
  }
}

void Worker::Impl::FailSwOps(EndpointId ep, const Status& why) {
  std::vector<uint64_t> ids;
  sw_ops.ForEach([&](uint64_t id, Op* op) {
    if (op->ep == ep) ids.push_back(id);
  });
  if (Endpoint* e = Find(ep); e != nullptr) e->sw_pending = 0;
  for (uint64_t id : ids) sw_ops.Complete(id, why);
  sw_ops.RunReady();
}

}  // namespace pulse::net
