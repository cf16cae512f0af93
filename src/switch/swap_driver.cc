#include "switch/swap_driver.h"

#include <fmt/format.h>

#include "node/node_control.h"

namespace pulse::switchd {

using nlohmann::json;

Result<std::unique_ptr<SwapDriver>> SwapDriver::Start(const net::WorkerOptions& worker,
                                                      std::chrono::milliseconds call_timeout,
                                                      std::function<void()> wake_switch) {
  net::WorkerOptions wo = worker;
  wo.name = "swap";
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<net::Worker> w, net::Worker::Create(wo));
  return std::unique_ptr<SwapDriver>(new SwapDriver(std::move(w), call_timeout, std::move(wake_switch)));
}

SwapDriver::SwapDriver(std::unique_ptr<net::Worker> worker, std::chrono::milliseconds call_timeout,
                       std::function<void()> wake_switch)
    : worker_(std::move(worker)),
      call_timeout_(call_timeout),
      wake_switch_(std::move(wake_switch)),
      control_(std::make_unique<ControlClient>(worker_.get())),
      thread_([this] { Loop(); }) {}

SwapDriver::~SwapDriver() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_->Wake();
  thread_.join();
}

void SwapDriver::UpdateView(const tier::TierPush& state, std::map<uint32_t, std::string> addresses) {
  std::lock_guard lk(mu_);
  latest_ = state;
  addresses_ = std::move(addresses);
}

void SwapDriver::Submit(tier::SwapRequest request, HeatMap heat) {
  {
    std::lock_guard lk(mu_);
    inbox_.emplace_back(request, std::move(heat));
  }
  cv_.notify_all();
}

void SwapDriver::ServeSwitch(const ApplyFn& apply, const std::function<void(SwapResult)>& done) {
  std::deque<SwapResult> finished;
  {
    std::lock_guard lk(mu_);
    if (commit_ && !commit_applied_) {
      Result<tier::TierPush> state = apply(commit_->first, commit_->second);
      if (state.ok()) latest_ = std::move(state).value();
      commit_applied_ = state.status();
      cv_.notify_all();
    }
    finished.swap(finished_);
  }
  for (SwapResult& r : finished) done(std::move(r));
}

void SwapDriver::Loop() {
  for (;;) {
    std::pair<tier::SwapRequest, HeatMap> job;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !inbox_.empty(); });
      if (stop_) return;
      job = std::move(inbox_.front());
      inbox_.pop_front();
      geometry_ = latest_.geometry;
      directory_ = latest_.directory;
      nodes_ = addresses_;
    }
    heat_ = std::move(job.second);
    SwapResult result{job.first, RunOne(job.first)};
    {
      std::lock_guard lk(mu_);
      finished_.push_back(std::move(result));
    }
    wake_switch_();
  }
}

Result<tier::SwapReport> SwapDriver::RunOne(tier::SwapRequest request) {
  frozen_.clear();
  content_.clear();
  allocations_.clear();
  tier::SwapCoordinator coordinator(&directory_, this);
  coordinator.Submit(request);
  return coordinator.ProcessNext();
}

tier::PageHeat SwapDriver::RackHeat(tier::RackId rack, tier::PageId page) {
  auto it = heat_.find({rack, page});
  return it != heat_.end() ? it->second : tier::PageHeat{};
}

std::optional<tier::PageId> SwapDriver::EmptyPage(tier::RackId rack) {
  std::optional<tier::PageId> lowest;
  for (const auto& [node, frames] : directory_.nodes()) {
    if (frames.rack != rack) continue;
    Result<json> answer = Call(node, json{{"op", "empty_frames"}});
    if (!answer.ok() || !answer->contains("frames") || !(*answer)["frames"].is_array()) continue;
    for (const json& index : (*answer)["frames"]) {
      if (!index.is_number_unsigned()) continue;
      const std::optional<tier::PageId> page = directory_.PageAt(tier::Frame{node, index.get<uint64_t>()});
      if (page && (!lowest || *page < *lowest)) lowest = page;
    }
  }
  return lowest;
}

Result<net::EndpointId> SwapDriver::Endpoint(uint32_t node) {
  auto address = nodes_.find(node);
  if (address == nodes_.end()) return Status::Unavailable(fmt::format("swap: memory node {} is not registered", node));
  if (auto it = eps_.find(node); it != eps_.end()) {
    if (it->second.first == address->second && worker_->IsConnected(it->second.second)) return it->second.second;
    (void)worker_->Close(it->second.second, std::chrono::milliseconds(0));  // an old incarnation
    eps_.erase(it);
  }
  PULSE_ASSIGN_OR_RETURN(auto hp, ParseAddress(address->second));
  Result<net::EndpointId> ep = worker_->Connect(hp.first, hp.second, call_timeout_);
  if (!ep.ok())
    return Status::FromCode(ep.status().code() == Status::Code::kTimeout ? Status::Code::kTimeout
                                                                          : Status::Code::kUnavailable,
                            fmt::format("swap: memory node {} at {}: {}", node, address->second, ep.status().message()));
  eps_[node] = {address->second, *ep};
  return *ep;
}

Result<json> SwapDriver::Call(uint32_t node, json request) {
  {
    std::lock_guard lk(mu_);
    if (stop_) return Status::Aborted("swap: the switch is stopping");
  }
  const std::string op = request["op"].get<std::string>();
  PULSE_ASSIGN_OR_RETURN(net::EndpointId ep, Endpoint(node));
  Result<json> answer = control_->Call(ep, std::move(request), call_timeout_);
  if (!answer.ok())
    return Status::FromCode(answer.status().code(),
                            fmt::format("swap: {} at memory node {}: {}", op, node, answer.status().message()));
  return answer;
}

Status SwapDriver::Invalidate(tier::RackId, tier::PageId page) {
  // The node holding the page closes its frame's gate in the rack pool (the
  // rack's CPU nodes stop loading and storing there), revokes the page's
  // allocations and answers them: they move with the page.
  PULSE_ASSIGN_OR_RETURN(const tier::PageEntry entry, directory_.Lookup(page));
  return Freeze(entry.frame, page);
}

Status SwapDriver::Freeze(tier::Frame frame, tier::PageId page) {
  // Thawed at the end whatever the answer: a freeze that timed out may
  // still run at the node, and the thaw sent after it on the same
  // connection undoes it.
  frozen_.insert(frame);
  content_[frame] = page;
  PULSE_ASSIGN_OR_RETURN(json answer,
                         Call(frame.node, json{{"op", "page_freeze"}, {"frame", frame.index}, {"page", page}}));
  auto list = answer.find("allocations");
  if (list == answer.end() || !list->is_array())
    return Status::Internal(fmt::format("swap: memory node {} answered page_freeze without allocations: {}",
                                        frame.node, answer.dump()));
  if (page != kNoPage) allocations_[page] = *list;
  return Status::Ok();
}

Result<SwapDriver::FrameAccess> SwapDriver::FrameKey(tier::Frame frame) {
  PULSE_ASSIGN_OR_RETURN(json a, Call(frame.node, json{{"op", "frame_key"}, {"frame", frame.index}}));
  if (!a.contains("rkey") || !a["rkey"].is_string() || !a.contains("remote_base") ||
      !a["remote_base"].is_number_unsigned() || !a.contains("length") || !a["length"].is_number_unsigned() ||
      a["length"].get<uint64_t>() != geometry_.page_size())
    return Status::Internal(fmt::format("swap: memory node {} answered frame_key without a page's key: {}",
                                        frame.node, a.dump()));
  PULSE_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, node::HexDecode(a["rkey"].get<std::string>()));
  PULSE_ASSIGN_OR_RETURN(net::EndpointId ep, Endpoint(frame.node));
  PULSE_ASSIGN_OR_RETURN(net::RemoteKey key, worker_->ImportRkey(ep, packed));
  return FrameAccess{std::move(key), a["remote_base"].get<uint64_t>(), a["length"].get<uint64_t>()};
}

Status SwapDriver::Transfer(tier::Frame from, tier::Frame to) {
  // A free frame receiving a page is frozen too, so that it can adopt the
  // page's allocations before the directory names it.
  if (to.index != tier::kSwapBufferFrame && frozen_.count(to) == 0) {
    const std::optional<tier::PageId> holds = directory_.PageAt(to);
    PULSE_RETURN_IF_ERROR(Freeze(to, holds.value_or(kNoPage)));
  }
  // Through this thread's buffer: one one-sided Get, one Put.  Both keys
  // reach only the frozen frames (or the swap buffer).
  PULSE_ASSIGN_OR_RETURN(FrameAccess src, FrameKey(from));
  PULSE_ASSIGN_OR_RETURN(FrameAccess dst, FrameKey(to));
  page_.resize(src.length);
  if (Status s = worker_->Get(src.key, src.remote_base, page_.data(), page_.size(), call_timeout_); !s.ok())
    return Status::FromCode(s.code(), fmt::format("swap: reading node {} frame {}: {}", from.node, from.index, s.message()));
  if (Status s = worker_->Put(dst.key, dst.remote_base, page_.data(), page_.size(), call_timeout_); !s.ok())
    return Status::FromCode(s.code(), fmt::format("swap: writing node {} frame {}: {}", to.node, to.index, s.message()));
  // The frame now holds the page that was in `from`: its allocations are
  // served there (not reachable by clients until the directory says so).
  const tier::PageId page = content_.count(from) != 0 ? content_[from] : kNoPage;
  content_[to] = page;
  if (to.index == tier::kSwapBufferFrame) return Status::Ok();
  auto moved = allocations_.find(page);
  const json allocations = moved != allocations_.end() ? moved->second : json::array();
  return Call(to.node, json{{"op", "page_adopt"}, {"frame", to.index}, {"page", page}, {"allocations", allocations}})
      .status();
}

Status SwapDriver::Commit(const tier::PageDirectory& directory, std::span<const tier::PageId> pages) {
  {
    std::lock_guard lk(mu_);
    commit_.emplace(directory, std::vector<tier::PageId>(pages.begin(), pages.end()));
    commit_applied_.reset();
  }
  wake_switch_();
  Status applied;
  {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, call_timeout_, [&] { return stop_ || commit_applied_.has_value(); });
    if (commit_applied_)
      applied = *commit_applied_;
    else
      applied = stop_ ? Status::Aborted("swap: the switch is stopping")
                      : Status::Timeout("swap: the switch did not publish the directory in time");
    commit_.reset();  // not applied later: the switch looks at it only under the lock
    commit_applied_.reset();
  }
  // Frames stay frozen (withheld) if the switch's directory may not say
  // what they hold.
  if (!applied.ok()) return applied;
  uint32_t version = 0;
  {
    std::lock_guard lk(mu_);
    version = latest_.directory.version();
  }
  return ThawAll(directory, version);
}

Status SwapDriver::ThawAll(const tier::PageDirectory& directory, uint32_t version) {
  for (const tier::Frame& f : frozen_) {
    if (f.index == tier::kSwapBufferFrame) continue;
    const std::optional<tier::PageId> holds = directory.PageAt(f);
    Result<tier::PageId> own = geometry_.PageOfNode(f.node, f.index);
    const bool home = holds && own.ok() && *holds == *own;
    // A node that does not answer keeps the frame withheld (or forgets it,
    // restarted): nothing is allocated where another page lives.  The swap
    // itself is done.
    IgnoreError(Call(f.node, json{{"op", "page_thaw"}, {"frame", f.index}, {"home", home},
                                  {"page", holds.value_or(kNoPage)}, {"version", version}})
                    .status());
  }
  frozen_.clear();
  content_.clear();
  allocations_.clear();
  return Status::Ok();
}

}  // namespace pulse::switchd
