// The real SwapFabric (pulse/tier/swap_coordinator.h) at the switch
// (docs/tier.md, "Moving pages"): a thread of its own, with a net::Worker
// of its own, runs the swap protocol for the requests the switch's
// SwapIntake hands it, one at a time, off the switch's network thread.
//
// Per request it takes the switch's latest directory, runs
// SwapCoordinator::ProcessNext over a copy, and speaks to the memory nodes
// with control requests (cluster credentials), each waited for at most
// `call_timeout`:
//   Invalidate(rack, page)  page_freeze {frame, page} at the node holding
//                           the page: the node refuses a frame it cannot
//                           move (a durable allocation in it, or one
//                           straddling it), otherwise closes the frame's
//                           gate in its rack pool, revokes the page's
//                           allocations and answers them;
//   Transfer(from, to)      frame_key {frame} at both nodes (a key to that
//                           one frame, or the node's swap buffer), then one
//                           one-sided Get from `from` and one Put to `to`
//                           through this thread's buffer; then page_adopt
//                           {frame, page, allocations} at `to` (a frame)
//                           for the page now in it;
//   Commit(directory, pages) hands the pages' new frames to the switch
//                           thread (ServeSwitch), waits until it applied
//                           them and pushed the directory, then page_thaw
//                           {frame, home, page} at every frame it froze
//                           (a frame still holding its page gets its
//                           allocations back, one holding another keeps
//                           the ones adopted).
// A node that is gone or silent fails the step with its error (Unavailable,
// Timeout, the node's code); the coordinator then restores the frames and
// publishes the unchanged directory, so the page stays where it was.
//
// Thread-safe: Submit, UpdateView and ServeSwitch are called from the
// switch's thread, everything else runs on the driver's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/control_client.h"
#include "pulse/net.h"
#include "pulse/status.h"
#include "pulse/tier/swap_coordinator.h"
#include "tier/tier_push.h"

namespace pulse::switchd {

// Reported hotness of (rack, page): what RackHeat answers.
using HeatMap = std::map<std::pair<tier::RackId, tier::PageId>, tier::PageHeat>;

// How a request ended, for the switch thread.
struct SwapResult {
  tier::SwapRequest request;
  Result<tier::SwapReport> report = Status::Internal("swap: not run");
};

class SwapDriver final : private tier::SwapFabric {
 public:
  // Called on the switch's thread with the pages a swap moved and the
  // directory that says where they are now; it must apply them to the
  // switch's directory and push it.
  // Returns the switch's tier state after applying them (the driver's view
  // from then on).
  using ApplyFn =
      std::function<Result<tier::TierPush>(const tier::PageDirectory& moved, std::span<const tier::PageId> pages)>;

  // Creates the driver's Worker (`worker` options: the switch's, for its
  // cluster credentials) and starts the thread.  `wake_switch` is called
  // from the driver's thread whenever ServeSwitch has work (thread-safe,
  // e.g. the switch Worker's Wake).
  static Result<std::unique_ptr<SwapDriver>> Start(const net::WorkerOptions& worker,
                                                   std::chrono::milliseconds call_timeout,
                                                   std::function<void()> wake_switch);
  // Stops the thread (a swap under way ends at its next step with
  // Aborted) and joins it.
  ~SwapDriver();

  // The switch's directory and the memory nodes' addresses ("host:port")
  // after any change.
  void UpdateView(const tier::TierPush& state, std::map<uint32_t, std::string> addresses);
  // Queues a request with the heats reported so far.
  void Submit(tier::SwapRequest request, HeatMap heat);
  // On the switch's thread: applies a waiting commit (`apply`) and hands
  // over finished requests (`done`).
  void ServeSwitch(const ApplyFn& apply, const std::function<void(SwapResult)>& done);

 private:
  SwapDriver(std::unique_ptr<net::Worker> worker, std::chrono::milliseconds call_timeout,
             std::function<void()> wake_switch);
  void Loop();
  // One request, start to end.
  Result<tier::SwapReport> RunOne(tier::SwapRequest request);

  // SwapFabric, on the driver's thread.
  tier::PageHeat RackHeat(tier::RackId rack, tier::PageId page) override;
  // Asks the rack's memory nodes which of their frames hold no allocation
  // (empty_frames); the lowest page in one of them.  A node that does not
  // answer is skipped (the coordinator then takes the coldest page).
  std::optional<tier::PageId> EmptyPage(tier::RackId rack) override;
  Status Invalidate(tier::RackId rack, tier::PageId page) override;
  Status Transfer(tier::Frame from, tier::Frame to) override;
  Status Commit(const tier::PageDirectory& directory, std::span<const tier::PageId> pages) override;

  // A control request to memory node `node`; its answer or error.
  Result<nlohmann::json> Call(uint32_t node, nlohmann::json request);
  Result<net::EndpointId> Endpoint(uint32_t node);
  // A key to `frame` at its node, imported here.
  struct FrameAccess {
    net::RemoteKey key;
    uint64_t remote_base = 0;
    uint64_t length = 0;
  };
  Result<FrameAccess> FrameKey(tier::Frame frame);
  // page_freeze of `frame`, which holds `page` (kNoPage: none); keeps the
  // page's allocations for page_adopt.
  Status Freeze(tier::Frame frame, tier::PageId page);
  static constexpr tier::PageId kNoPage = ~tier::PageId{0};
  // page_thaw at every frame frozen by this swap, per `directory`, which
  // the switch published as version `version`.
  Status ThawAll(const tier::PageDirectory& directory, uint32_t version);

  std::unique_ptr<net::Worker> worker_;  // the driver thread's only
  const std::chrono::milliseconds call_timeout_;
  std::function<void()> wake_switch_;

  // Shared with the switch's thread.
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::deque<std::pair<tier::SwapRequest, HeatMap>> inbox_;
  tier::TierPush latest_;
  std::map<uint32_t, std::string> addresses_;
  std::optional<std::pair<tier::PageDirectory, std::vector<tier::PageId>>> commit_;  // for the switch
  std::optional<Status> commit_applied_;                                             // its answer
  std::deque<SwapResult> finished_;

  // The driver's thread only.
  tier::PageGeometry geometry_;
  tier::PageDirectory directory_;  // the coordinator's copy for one request
  HeatMap heat_;
  std::map<uint32_t, std::string> nodes_;
  std::unique_ptr<ControlClient> control_;
  std::map<uint32_t, std::pair<std::string, net::EndpointId>> eps_;  // node -> (address, endpoint)
  std::set<tier::Frame> frozen_;  // by this request
  std::map<tier::Frame, tier::PageId> content_;      // the page each frame (or buffer) holds now
  std::map<tier::PageId, nlohmann::json> allocations_;  // each frozen page's, as page_freeze answered
  std::vector<uint8_t> page_;     // a page in transit
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace pulse::switchd
