#include "client/page_heat.h"

namespace pulse {

using nlohmann::json;

PageHeatCounter::PageHeatCounter(Connections* connections, ClientCounters* counters)
    : connections_(connections), counters_(counters), tracker_(connections->options.hotness, &clock_) {}

void PageHeatCounter::OnFabricAccess(uint64_t addr, tier::AccessKind kind) {
  const ClientOptions& o = connections_->options;
  if (o.rack.empty() || !o.hot_page_requests) return;
  const tier::TierPush* push = connections_->pages.push();
  if (push == nullptr) return;
  auto mine = push->racks.find(o.rack);
  std::optional<tier::PageLocation> where = connections_->pages.Locate(addr);
  if (mine == push->racks.end() || !where) return;
  const tier::MemoryNodeFrames* holder = push->directory.FindNode(where->node);
  if (holder == nullptr || holder->rack == mine->second) return;  // this rack's page
  ++counters_->remote_page_accesses;
  const tier::PageHeat heat = tracker_.Record(where->page, kind);
  if (!heat.hot) return;
  const auto now = std::chrono::steady_clock::now();
  auto asked = requested_.find(where->page);
  const uint32_t directory = connections_->pages.version();
  if (asked != requested_.end() && asked->second.page_version == where->page_version &&
      (asked->second.directory_version == directory || now - asked->second.at < kRequestAgainAfter))
    return;
  requested_[where->page] = Requested{where->page_version, directory, now};
  if (!connections_->EnsureSwitch().ok()) {
    ++counters_->swap_request_errors;
    return;
  }
  json request{{"op", "swap_request"}, {"page", where->page},     {"rack", o.rack},
               {"hotness", heat.hotness}, {"reads", heat.reads}, {"writes", heat.writes}};
  Result<json> answer = connections_->control->Call(connections_->switch_ep, std::move(request), connections_->rma_timeout());
  if (!answer.ok()) {
    ++counters_->swap_request_errors;
    return;
  }
  ++counters_->swap_requests;
  if (!answer->value("queued", false)) ++counters_->swap_requests_dropped;
}

}  // namespace pulse
