// MemNodeServer's use of the page directory (docs/tier.md): adopting it
// from the switch's routing pushes, and where a page is now.
#include "memnode/memnode_server.h"

namespace pulse::memnode {

void MemNodeServer::AdoptPages(const nlohmann::json& table) {
  Result<bool> adopted = pages_.Adopt(table);
  if (!adopted.ok()) {
    log_->Warn("the switch sent a malformed page directory: {}", adopted.status().message());
  } else if (*adopted) {
    log_->Debug("page directory version {}", pages_.version());
    // Allocations from now on keep to pages, so that pages stay movable.
    if (const tier::TierPush* push = pages_.push(); push != nullptr && !options_.rack.empty())
      allocator_->SetPageBytes(push->geometry.page_size());
    WithholdForeignFrames();
  }
}

bool MemNodeServer::HoldsHere(uint64_t addr) const {
  if (std::optional<tier::PageLocation> l = pages_.Locate(addr)) return l->node == options_.node;
  return addr - far_base_ < pool_->size();
}

std::optional<NodeId> MemNodeServer::OwnerOf(uint64_t addr) const {
  return pages_.OwnerOf(addr, [this](uint64_t a) -> std::optional<NodeId> {
    const RouteEntry* e = routing_.OwnerOf(a);
    return e != nullptr ? std::optional<NodeId>(e->node) : std::nullopt;
  });
}

}  // namespace pulse::memnode
