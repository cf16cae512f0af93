#include "client/lifetimes.h"

#include <random>

#include <fmt/format.h>

namespace pulse {

using nlohmann::json;

namespace {
// Session ids are random so that one client cannot name another's by
// accident; 62 bits keep them positive everywhere JSON carries them.
uint64_t RandomSession() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = ((uint64_t{rd()} << 32) | rd()) >> 2;
  return id;
}
}  // namespace

ClientLifetimes::ClientLifetimes(Connections* connections, EnsureFn ensure)
    : connections_(connections), ensure_(std::move(ensure)), session_(RandomSession()) {}

void ClientLifetimes::Tag(json* request) const {
  (*request)["tenant"] = connections_->options.tenant;
  (*request)["session"] = session_;
}

void ClientLifetimes::TagAlloc(json* request) const {
  Tag(request);
  if (!root_.empty()) (*request)["root"] = root_;
}

Result<json> ClientLifetimes::CallNode(MemNode& n, json request) {
  PULSE_RETURN_IF_ERROR(ensure_(n));
  Tag(&request);
  return connections_->control->Call(n.ep, std::move(request), connections_->rma_timeout());
}

Status ClientLifetimes::PublishRoot(const std::string& name, uint64_t addr) {
  const MemNode* home = connections_->NodeFor(addr);
  if (home == nullptr)
    return Status::InvalidArgument(fmt::format("publish root '{}': {:#x} is outside every memory node", name, addr));
  std::set<uint32_t> nodes = NodesHoldingSession();
  nodes.insert(home->id);
  for (MemNode& n : connections_->nodes) {
    if (nodes.count(n.id) == 0) continue;
    json request{{"op", "persist"}, {"root", name}};
    if (n.id == home->id) request["addr"] = addr;
    Result<json> r = CallNode(n, std::move(request));
    if (!r.ok())
      return Status::FromCode(r.status().code(), fmt::format("publish root '{}' on memory node {}: {}", name, n.id,
                                                             r.status().message()));
  }
  root_ = name;
  return Status::Ok();
}

Result<uint64_t> ClientLifetimes::OpenRoot(const std::string& name) {
  Status last = Status::NotFound(fmt::format("open root '{}': no memory node holds it", name));
  for (MemNode& n : connections_->nodes) {
    Result<json> r = CallNode(n, json{{"op", "root_get"}, {"root", name}});
    if (!r.ok()) {
      if (r.status().code() != Status::Code::kNotFound) last = r.status();
      continue;
    }
    const uint64_t addr = r->value("addr", uint64_t{0});
    if (addr == 0) continue;  // a node holding only some of its memory
    root_ = name;
    return addr;
  }
  return last;
}

Status ClientLifetimes::DropRoot(const std::string& name) {
  bool found = false;
  for (MemNode& n : connections_->nodes) {
    Result<json> r = CallNode(n, json{{"op", "root_drop"}, {"root", name}});
    if (r.ok()) {
      found = true;
    } else if (r.status().code() != Status::Code::kNotFound) {
      return r.status();
    }
  }
  if (root_ == name) root_.clear();
  if (!found) return Status::NotFound(fmt::format("drop root '{}': no memory node holds it", name));
  return Status::Ok();
}

std::set<uint32_t> ClientLifetimes::NodesHoldingSession() const {
  // Pages move between nodes with their allocations (docs/tier.md): with a
  // page directory, any node may hold some of the session's memory.
  if (connections_->pages.push() == nullptr) return nodes_used_;
  std::set<uint32_t> all;
  for (const MemNode& n : connections_->nodes) all.insert(n.id);
  return all;
}

void ClientLifetimes::EndSession() {
  const std::set<uint32_t> nodes = NodesHoldingSession();
  for (MemNode& n : connections_->nodes) {
    if (nodes.count(n.id) == 0 || n.lost || n.ep == net::kInvalidEndpoint ||
        !connections_->worker->IsConnected(n.ep))
      continue;  // a lost connection's session runs out its lease instead
    json request{{"op", "end_session"}};
    Tag(&request);
    (void)connections_->control->Call(n.ep, std::move(request), connections_->options.request_timeout);
  }
}

}  // namespace pulse
