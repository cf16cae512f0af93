// Fuzz target: the JSON control plane of the node processes -- the switch's
// and a memory node's control dispatch (SwitchServer / MemNodeServer
// OnControl: node::ParseControl, the field readers, the operations, the
// replies) -- through their real handlers: both servers run in this process
// on their own threads, on loopback, and the target talks to them over a
// net::Worker of its own, as a CPU node does (kAmControl in, kAmControlReply
// out).  The servers start at the first input and live until exit.
//
// Input, byte 0:
//   bit 0 clear ("raw"): the rest is one request's bytes, sent as they are
//     to the switch (bit 1 set) or the memory node: any JSON or none.
//     Requests whose op changes state (alloc, free, locks, registration,
//     shutdown) are not sent raw: the structured mode owns that state.
//   bit 0 set ("structured"): the rest is up to 8 operations (alloc, free,
//     lock, lock_renew, unlock, hello, stats) on the memory node, each field
//     valid or not as the bytes choose (missing, negative, fractional, a
//     string, a boolean, too large), each with a seq never used before.
// Checks: every request gets exactly one answer within a deadline, a JSON
// object with "ok" a boolean and the request's "seq" (null if it had none);
// an error has a non-zero code its caller decodes back to a failure, never
// to success (ControlReplyStatus); and in structured mode each answer is the
// one a plain model predicts: which fields make a request invalid (in the
// node's order), allocations inside the node's span, disjoint, at least as
// large as asked; free only by the owner and only at an allocation's start
// (else NotFound / PermissionDenied); a lock only on the tenant's own
// memory.  The servers must keep answering: every input ends with a hello.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "memnode/memnode_server.h"
#include "node/node_log.h"
#include "protocol/control_reply.h"
#include "pulse/cluster.h"
#include "pulse/net.h"
#include "switch/switch_server.h"

namespace pulse::fuzz {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr uint64_t kPoolBytes = 1 << 20;
constexpr uint64_t kGranularity = 64 * 1024;
constexpr auto kAnswerDeadline = 10s;

// A switch and one memory node in this process, and a CPU-node worker
// connected to both.
class ControlRack {
 public:
  static ControlRack& Get() {
    static ControlRack* rack = new ControlRack();  // lives until exit; atexit stops it
    return *rack;
  }

  // Sends `payload` to the switch or the memory node; the answer (parsed, or
  // discarded if it is no JSON), or nullopt after the deadline.
  std::optional<json> Call(bool to_switch, std::span<const uint8_t> payload) {
    const size_t before = replies_.size();
    Status s = client_->Send(to_switch ? switch_ep_ : memnode_ep_, kAmControl,
                             std::vector<uint8_t>(payload.begin(), payload.end()));
    PULSE_FUZZ_CHECK(s.ok(), "sending a control request: {}", s.ToString());
    (void)client_->RunUntil([&] { return replies_.size() > before; }, kAnswerDeadline);
    if (replies_.size() == before) return std::nullopt;
    PULSE_FUZZ_CHECK(replies_.size() == before + 1, "{} answers to one request", replies_.size() - before);
    json reply = std::move(replies_.back());
    replies_.clear();
    return reply;
  }
  uint64_t NextSeq() { return next_seq_++; }
  uint64_t node_base() const { return FarBase(0); }

 private:
  ControlRack() : log_("fuzz-control", node::LogLevel::kError) {
    // One process, loopback, no secret: open listeners (WorkerOptions::insecure),
    // so that the fuzzed control messages come from a peer that may act for any tenant.
    switchd::SwitchServerOptions so;
    so.listen_port = 0;
    so.worker.insecure = true;
    auto sw = switchd::SwitchServer::Create(so, &log_);
    PULSE_FUZZ_CHECK(sw.ok(), "switch: {}", sw.status().ToString());
    switch_ = std::move(sw).value();
    Status s = switch_->Start();
    PULSE_FUZZ_CHECK(s.ok(), "switch: {}", s.ToString());
    switch_thread_ = std::thread([this] { (void)switch_->Run(); });

    memnode::MemNodeServerOptions mo;
    mo.node = 0;
    mo.switch_port = switch_->port();
    mo.pool_bytes = kPoolBytes;
    mo.granularity_bytes = kGranularity;
    mo.shm_name = "/pulse-fuzz-control-" + std::to_string(getpid());
    mo.calibrate = false;
    mo.reattach_pool = false;
    mo.worker.insecure = true;
    auto mn = memnode::MemNodeServer::Create(mo, &log_);
    PULSE_FUZZ_CHECK(mn.ok(), "memory node: {}", mn.status().ToString());
    memnode_ = std::move(mn).value();
    s = memnode_->Start();
    PULSE_FUZZ_CHECK(s.ok(), "memory node: {}", s.ToString());
    memnode_thread_ = std::thread([this] { (void)memnode_->Run(); });

    auto w = net::Worker::Create();
    PULSE_FUZZ_CHECK(w.ok(), "worker: {}", w.status().ToString());
    client_ = std::move(w).value();
    client_->SetHandler(kAmControlReply, [this](net::EndpointId, std::span<const uint8_t> p) {
      replies_.push_back(json::parse(p.begin(), p.end(), nullptr, /*allow_exceptions=*/false));
    });
    auto ep = client_->Connect("127.0.0.1", switch_->port(), kAnswerDeadline);
    PULSE_FUZZ_CHECK(ep.ok(), "connecting to the switch: {}", ep.status().ToString());
    switch_ep_ = *ep;
    ep = client_->Connect("127.0.0.1", memnode_->port(), kAnswerDeadline);
    PULSE_FUZZ_CHECK(ep.ok(), "connecting to the memory node: {}", ep.status().ToString());
    memnode_ep_ = *ep;
    std::atexit([] { Get().Stop(); });
  }

  // Stops both servers (the memory node unlinks its pool).
  void Stop() {
    client_.reset();
    memnode_->RequestStop();
    memnode_thread_.join();
    memnode_.reset();
    switch_->RequestStop();
    switch_thread_.join();
    switch_.reset();
  }

  node::NodeLog log_;
  std::unique_ptr<switchd::SwitchServer> switch_;
  std::unique_ptr<memnode::MemNodeServer> memnode_;
  std::thread switch_thread_, memnode_thread_;
  std::unique_ptr<net::Worker> client_;
  net::EndpointId switch_ep_ = net::kInvalidEndpoint, memnode_ep_ = net::kInvalidEndpoint;
  std::vector<json> replies_;
  uint64_t next_seq_ = uint64_t{1} << 62;  // never a seq a raw input is likely to carry
};

// The answer's shape, whatever the request: a JSON object echoing `seq`,
// "ok" a boolean, and an error that decodes to a failure with a known,
// non-zero code.  Returns the decoded status.
Status CheckAnswer(const std::optional<json>& reply, const json& seq, const std::string& what) {
  PULSE_FUZZ_CHECK(reply.has_value(), "{}: no answer within {} s", what, kAnswerDeadline.count());
  PULSE_FUZZ_CHECK(reply->is_object(), "{}: the answer is not a JSON object", what);
  PULSE_FUZZ_CHECK(reply->contains("ok") && (*reply)["ok"].is_boolean(), "{}: no boolean \"ok\": {}", what,
                   reply->dump());
  PULSE_FUZZ_CHECK(reply->contains("seq") && (*reply)["seq"] == seq, "{}: seq {} answered as {}", what, seq.dump(),
                   reply->value("seq", json()).dump());
  const Status s = ControlReplyStatus(*reply);
  const bool ok = (*reply)["ok"].get<bool>();
  PULSE_FUZZ_CHECK(s.ok() == ok, "{}: \"ok\": {} decodes as {}", what, ok, s.ToString());
  if (!ok) {
    PULSE_FUZZ_CHECK(s.code() != Status::Code::kInternal, "{}: an error without a proper code: {}", what,
                     reply->dump());
    PULSE_FUZZ_CHECK(reply->contains("error") && (*reply)["error"].is_string() &&
                         !(*reply)["error"].get<std::string>().empty(),
                     "{}: an error without a message", what);
  }
  return s;
}

// ---- structured mode ---------------------------------------------------

class Bytes {
 public:
  explicit Bytes(std::span<const uint8_t> in) : in_(in) {}
  bool empty() const { return at_ >= in_.size(); }
  uint8_t Next() { return at_ < in_.size() ? in_[at_++] : 0; }

 private:
  std::span<const uint8_t> in_;
  size_t at_ = 0;
};

// A field value as the bytes choose: mostly `valid`, else one of the ways
// a field can be wrong.  Returns false (leaving it out) for "missing".
bool PutField(json* body, const char* field, const json& valid, Bytes& b) {
  switch (b.Next() % 12) {
    case 0: return false;
    case 1: (*body)[field] = -1; break;
    case 2: (*body)[field] = 1.5; break;
    case 3: (*body)[field] = "7"; break;
    case 4: (*body)[field] = true; break;
    case 5: (*body)[field] = UINT64_MAX; break;
    case 6: (*body)[field] = uint64_t{1} << 32; break;
    default: (*body)[field] = valid; break;
  }
  return true;
}

// What node::GetU64 / GetU32 accept.
bool IsU64(const json& body, const char* field) {
  auto it = body.find(field);
  return it != body.end() && it->is_number_integer() && (it->is_number_unsigned() || it->get<int64_t>() >= 0);
}
bool IsU32(const json& body, const char* field) { return IsU64(body, field) && body[field].get<uint64_t>() <= UINT32_MAX; }
bool IsString(const json& body, const char* field) { return body.contains(field) && body[field].is_string(); }

struct Allocation {
  uint64_t length;
  uint32_t tenant;
};

// The memory node's allocations as the answers made them.
class Model {
 public:
  // The live allocation containing addr.
  const std::pair<const uint64_t, Allocation>* Find(uint64_t addr) const {
    auto it = live_.upper_bound(addr);
    if (it == live_.begin()) return nullptr;
    --it;
    return addr - it->first < it->second.length ? &*it : nullptr;
  }
  // An address for a field: in (or at the start of) a live allocation, or
  // anywhere in or around the node's span.
  uint64_t PickAddress(Bytes& b, uint64_t node_base) const {
    const uint8_t which = b.Next(), off = b.Next();
    if (!live_.empty() && which % 4 != 0) {
      auto it = live_.begin();
      std::advance(it, which % live_.size());
      return it->first + (off % 4 == 0 ? 0 : off * 8ull);
    }
    return node_base - 4096 + which * kGranularity / 4 + off;
  }
  std::map<uint64_t, Allocation>& live() { return live_; }

 private:
  std::map<uint64_t, Allocation> live_;
};

Model& TheModel() {
  static Model* m = new Model();
  return *m;
}

void ExpectCode(const Status& got, Status::Code want, const std::string& what) {
  PULSE_FUZZ_CHECK(got.code() == want, "{}: answered {}, the model says code {}", what, got.ToString(),
                   static_cast<int>(want));
}

void StructuredOp(ControlRack& rack, Bytes& b) {
  Model& model = TheModel();
  static const char* const kOps[] = {"alloc", "free", "lock", "lock_renew", "unlock", "hello", "stats"};
  const std::string op = kOps[b.Next() % std::size(kOps)];
  const uint64_t seq = rack.NextSeq();
  json body{{"op", op}, {"seq", seq}};
  const uint32_t tenant = 1 + b.Next() % 2;
  PutField(&body, "tenant", tenant, b);
  if (op == "alloc") {
    PutField(&body, "bytes", 1 + (b.Next() * 4099ull) % (kPoolBytes / 2), b);
    const uint8_t perms = b.Next() % 8;
    if (perms == 1) body["perms"] = "r";
    if (perms == 2) body["perms"] = "rw";
    if (perms == 3) body["perms"] = "x";
  } else if (op == "free") {
    PutField(&body, "base", model.PickAddress(b, rack.node_base()), b);
  } else if (op == "lock" || op == "lock_renew" || op == "unlock") {
    PutField(&body, "addr", model.PickAddress(b, rack.node_base()), b);
    PutField(&body, "holder", uint64_t{b.Next()}, b);
    PutField(&body, "lease_ms", static_cast<uint64_t>(1 + b.Next() % 3) * 1000, b);
    if (b.Next() % 8 != 0) body["mode"] = b.Next() % 2 ? "shared" : "exclusive";
  }
  const std::string text = body.dump();
  const std::string what = "memory node " + text;
  const std::optional<json> reply =
      rack.Call(false, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  const Status got = CheckAnswer(reply, seq, what);

  if (op == "alloc") {
    const auto& bytes = body.find("bytes");
    const bool bytes_ok = bytes != body.end() && bytes->is_number_integer() &&
                          (bytes->is_number_unsigned() ? bytes->get<uint64_t>() > 0 : bytes->get<int64_t>() > 0);
    const bool perms_ok = !body.contains("perms") || body["perms"] == "r" || body["perms"] == "rw";
    if (!bytes_ok || !IsU32(body, "tenant") || !perms_ok) return ExpectCode(got, Status::Code::kInvalidArgument, what);
    if (!got.ok()) return ExpectCode(got, Status::Code::kResourceExhausted, what);
    const uint64_t base = (*reply).value("base", uint64_t{0}), length = (*reply).value("length", uint64_t{0});
    const uint64_t asked = bytes->get<uint64_t>();
    PULSE_FUZZ_CHECK(length >= asked && length % kGranularity == 0, "{}: {} bytes given", what, length);
    PULSE_FUZZ_CHECK(base >= rack.node_base() && base + length <= rack.node_base() + kPoolBytes,
                     "{}: [{:#x}, +{}) outside the node's pool", what, base, length);
    PULSE_FUZZ_CHECK(!model.Find(base) && !model.Find(base + length - 1) &&
                         (model.live().lower_bound(base) == model.live().end() ||
                          model.live().lower_bound(base)->first >= base + length),
                     "{}: [{:#x}, +{}) overlaps a live allocation", what, base, length);
    model.live()[base] = Allocation{length, body["tenant"].get<uint32_t>()};
    return;
  }
  if (op == "free") {
    if (!IsU64(body, "base") || !IsU32(body, "tenant")) return ExpectCode(got, Status::Code::kInvalidArgument, what);
    const uint64_t base = body["base"].get<uint64_t>();
    auto it = model.live().find(base);
    if (it == model.live().end()) return ExpectCode(got, Status::Code::kNotFound, what);
    if (it->second.tenant != body["tenant"].get<uint32_t>())
      return ExpectCode(got, Status::Code::kPermissionDenied, what);
    PULSE_FUZZ_CHECK(got.ok(), "{}: the owner's free of a live allocation failed: {}", what, got.ToString());
    model.live().erase(it);
    return;
  }
  if (op == "lock" || op == "lock_renew" || op == "unlock") {
    if (!IsU64(body, "addr") || !IsU32(body, "tenant") || !IsU64(body, "holder"))
      return ExpectCode(got, Status::Code::kInvalidArgument, what);
    const auto* a = model.Find(body["addr"].get<uint64_t>());
    if (a == nullptr) return ExpectCode(got, Status::Code::kNotFound, what);
    if (a->second.tenant != body["tenant"].get<uint32_t>())
      return ExpectCode(got, Status::Code::kPermissionDenied, what);
    if (op == "unlock") return;  // the lock table decides (its own unit test)
    const bool lease_ok = IsU64(body, "lease_ms") && body["lease_ms"].get<uint64_t>() >= 1 &&
                          body["lease_ms"].get<uint64_t>() <= 3600 * 1000;
    if (!lease_ok) return ExpectCode(got, Status::Code::kInvalidArgument, what);
    if (op == "lock") {
      const bool mode_ok = IsString(body, "mode") && (body["mode"] == "shared" || body["mode"] == "exclusive");
      if (!mode_ok) return ExpectCode(got, Status::Code::kInvalidArgument, what);
      PULSE_FUZZ_CHECK(got.ok() && (*reply).contains("granted") && (*reply)["granted"].is_boolean(),
                       "{}: a valid lock request answered {}", what, reply->dump());
    }
    return;
  }
  PULSE_FUZZ_CHECK(got.ok(), "{}: {}", what, got.ToString());  // hello, stats
}

// The ops a raw input may not send (they change state the model tracks, or
// stop a server).
bool ChangesState(std::span<const uint8_t> payload) {
  json j = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  auto op = j.find("op");
  if (op == j.end() || !op->is_string()) return false;
  static const char* const kStateful[] = {"alloc", "free", "lock", "lock_renew", "unlock", "register_memnode",
                                          "shutdown"};
  for (const char* s : kStateful)
    if (*op == s) return true;
  return false;
}

// The seq a node reads from a request (node::ParseControl): "seq" of a JSON
// object, else null.
json SeqOf(std::span<const uint8_t> payload) {
  json j = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("seq")) return nullptr;
  return j["seq"];
}

}  // namespace

void FuzzControl(std::span<const uint8_t> data) {
  if (data.empty()) return;
  ControlRack& rack = ControlRack::Get();
  const std::span<const uint8_t> rest = data.subspan(1);
  if ((data[0] & 1) == 0) {
    if (ChangesState(rest)) return;
    const bool to_switch = data[0] & 2;
    (void)CheckAnswer(rack.Call(to_switch, rest), SeqOf(rest), to_switch ? "switch" : "memory node");
  } else {
    Bytes b(rest);
    for (int i = 0; i < 8 && !b.empty(); ++i) StructuredOp(rack, b);
  }
  // Both still answer.
  for (bool to_switch : {false, true}) {
    const uint64_t seq = rack.NextSeq();
    const std::string hello = json{{"op", "hello"}, {"seq", seq}}.dump();
    const Status s = CheckAnswer(
        rack.Call(to_switch, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(hello.data()), hello.size())),
        seq, to_switch ? "hello to the switch" : "hello to the memory node");
    PULSE_FUZZ_CHECK(s.ok(), "hello: {}", s.ToString());
  }
}

}  // namespace pulse::fuzz
