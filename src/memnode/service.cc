#include "memnode/service.h"

#include "pulse/cluster.h"

namespace pulse {

MemNodeService::MemNodeService(RangeTable* table, const MemNodeServiceOptions& options)
    : table_(table), options_(options) {
  if (options.pipelines > 1) {
    threads_ = std::make_unique<memnode::PipelineThreads>(table, options.engine, options.pipelines,
                                                          options.slice_iterations, [this] {
                                                            if (wake_) wake_();
                                                          });
  } else {
    pipeline_ = std::make_unique<Pipeline>(table, options.engine);
  }
  running_.resize(capacity());
  free_running_.reserve(running_.size());
  for (uint32_t i = static_cast<uint32_t>(running_.size()); i-- > 0;) free_running_.push_back(i);
}

// The threads go first: they call wake_.
MemNodeService::~MemNodeService() { StopPipelines(); }

Status MemNodeService::ChangeRangeTable(const std::function<Status()>& change) {
  Status s;
  if (threads_ != nullptr) {
    threads_->ChangeRangeTable([&] { s = change(); });
  } else {
    s = change();
    pipeline_->OnRangeTableChanged();
  }
  return s;
}

Status MemNodeService::AddRange(const Range& range) {
  return ChangeRangeTable([&] { return table_->Add(range); });
}

Status MemNodeService::RemoveRange(uint64_t base) {
  return ChangeRangeTable([&] { return table_->Remove(base); });
}

uint32_t MemNodeService::active() const { return threads_ != nullptr ? threads_->active() : pipeline_->active(); }

uint32_t MemNodeService::capacity() const {
  return threads_ != nullptr ? threads_->capacity() : pipeline_->capacity();
}

bool MemNodeService::CanAdmitNext() const {
  if (queued() == 0) return false;
  if (threads_ == nullptr) return pipeline_->HasFreeWorkspace();
  // In arrival order: a STORE-bearing request waits for the writer lane
  // (pipeline_threads.h) and the requests behind it wait with it.
  return threads_->HasFreeWorkspaceFor(queue_[queue_head_].program->info().has_store);
}

bool MemNodeService::NeedsPoll() const {
  const bool needs = threads_ == nullptr ? !Idle() : CanAdmitNext() || threads_->HasFinished();
  if (!needs) now_valid_ = false;  // the caller's pass ends here (Now())
  return needs;
}

void MemNodeService::WaitForWork(std::chrono::milliseconds timeout) {
  // Nothing running: nothing will finish.
  if (threads_ != nullptr && threads_->active() > 0 && !NeedsPoll()) threads_->WaitForFinished(timeout);
}

std::vector<memnode::PipelineLoad> MemNodeService::pipeline_loads() const {
  if (threads_ != nullptr) return threads_->loads();
  return {memnode::PipelineLoad{pipeline_->active(), served_, pipeline_->prefetches_issued(),
                                pipeline_->prefetches_ignored()}};
}

void MemNodeService::Reply(TraversalMessage&& m, TraversalStatus status, const SendFn& send) {
  m.kind = MessageKind::kResponse;
  m.status = status;
  m.program.clear();
  // Nothing ran: the answer names no fault location, whatever the request
  // carried in those fields.
  m.fault_pc = 0;
  m.fault_addr = 0;
  ++counters_.responses;
  send(std::move(m));
}

void MemNodeService::Handle(TraversalMessage&& m, const SendFn& send) {
  ++counters_.requests;
  if (m.kind != MessageKind::kRequest) {
    ++counters_.bad_requests;
    return Reply(std::move(m), TraversalStatus::kFaultBadRequest, send);
  }
  if (m.flags & kFlagNoop) return Reply(std::move(m), TraversalStatus::kDone, send);
  ProgramRef program;
  if (!m.program.empty()) {
    VerifierOptions vo;
    vo.scratch_pad_bytes = options_.engine.scratch_pad_bytes;
    auto p = VerifiedProgram::FromBytes(m.program, vo);
    if (!p.ok() || (m.program_hash != 0 && (*p)->hash() != m.program_hash)) {
      ++counters_.bad_requests;
      return Reply(std::move(m), TraversalStatus::kFaultBadRequest, send);
    }
    program = *p;
    if (programs_.size() >= options_.program_cache_entries) {
      programs_.clear();
      last_program_ = nullptr;
    }
    if (programs_.emplace(program->hash(), program).second) ++counters_.programs_cached;
  } else {
    program = FindProgram(m.program_hash);
    if (program == nullptr) {
      ++counters_.unknown_programs;
      return Reply(std::move(m), TraversalStatus::kUnknownProgram, send);
    }
  }
  // Whether to suppress duplicates is the program's property, not the
  // sender's claim.
  if (program->info().has_store) m.flags |= kFlagHasStore;
  // Refused here rather than by the engine, so that it takes no workspace.
  if (m.scratch.size() > options_.engine.scratch_pad_bytes) {
    ++counters_.bad_requests;
    m.program_hash = program->hash();
    return Reply(std::move(m), TraversalStatus::kFaultBadRequest, send);
  }
  const bool has_store = (m.flags & kFlagHasStore) != 0;
  if (has_store) {
    auto done = store_done_.find(StoreVisit{m.request_id, m.iterations});
    if (done != store_done_.end()) {  // the original ran: repeat its answer
      ++counters_.duplicates;
      TraversalMessage copy = done->second;
      ++counters_.responses;
      return send(std::move(copy));
    }
    if (store_in_flight_.count(StoreVisit{m.request_id, m.iterations})) {  // the original is running: it will answer
      ++counters_.duplicates;
      return;
    }
    TraversalMessage earlier;
    switch (record_ ? record_->Lookup(m, program->hash(), &earlier) : memnode::StoreRecord::Earlier::kNone) {
      case memnode::StoreRecord::Earlier::kAnswered:  // ran to the end before a restart
        ++counters_.durable_answers;
        ++counters_.responses;
        return send(std::move(earlier));
      case memnode::StoreRecord::Earlier::kUnknown:  // a restart came while it ran
        ++counters_.outcome_unknown;
        return Reply(std::move(m), TraversalStatus::kOutcomeUnknown, send);
      case memnode::StoreRecord::Earlier::kNone:
        break;
    }
  }
  if (queued() >= options_.max_queued) {
    ++counters_.bad_requests;
    return Reply(std::move(m), TraversalStatus::kFaultBadRequest, send);
  }
  if (m.flags & kFlagHasStore) {
    store_in_flight_.insert(StoreVisit{m.request_id, m.iterations});
    if (record_) record_->Begin(m, program->hash());
  }
  queue_.push_back(Pending{std::move(m), std::move(program), Now()});
}

ProgramRef MemNodeService::FindProgram(uint64_t hash) {
  if (last_program_ != nullptr && last_program_->hash() == hash) return last_program_;
  auto it = programs_.find(hash);
  if (it == programs_.end()) return nullptr;
  last_program_ = it->second;
  return last_program_;
}

void MemNodeService::PopQueueFront() {
  // Admit() moved the entry's program and message out: nothing to release.
  if (++queue_head_ == queue_.size()) {
    queue_.clear();  // capacity kept
    queue_head_ = 0;
  } else if (queue_head_ >= 1024 && 2 * queue_head_ >= queue_.size()) {
    // A backlog that never drains: drop the consumed half now and then.
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(queue_head_));
    queue_head_ = 0;
  }
}

void MemNodeService::Admit() {
  if (!CanAdmitNext()) return;
  const Clock::time_point now = Now();
  do {
    // Every admitted traversal holds a workspace, and running_ has one
    // entry per workspace, freed (Finish) before the workspace is reused:
    // a free index exists whenever a workspace does.  Defensive only.
    if (free_running_.empty()) break;
    Pending& p = QueueFront();
    const uint32_t index = free_running_.back();
    free_running_.pop_back();
    TraversalRequest req;
    req.id = index;
    req.program = std::move(p.program);
    req.tenant = p.message.tenant;
    req.max_iterations = p.message.max_iterations;
    req.state.cur_ptr = p.message.cur_ptr;
    req.state.iterations = p.message.iterations;
    req.state.scratch = std::move(p.message.scratch);
    counters_.queue_wait_ns += static_cast<uint64_t>(std::chrono::nanoseconds(now - p.arrived).count());
    running_[index] = Running{std::move(p.message), now};
    PopQueueFront();
    if (threads_ != nullptr) {
      threads_->Admit(std::move(req));
    } else {
      pipeline_->Admit(std::move(req));
    }
  } while (CanAdmitNext());
}

void MemNodeService::Remember(StoreVisit visit, const TraversalMessage& response) {
  store_in_flight_.erase(visit);
  store_done_[visit] = response;
  store_done_order_.push_back(visit);
  while (store_done_order_.size() > options_.dedup_entries) {
    store_done_.erase(store_done_order_.front());
    store_done_order_.pop_front();
  }
}

void MemNodeService::AttachProgramIfNeeded(const VerifiedProgram& program, TraversalMessage* m) {
  const int64_t node = NodeOfFarAddress(m->cur_ptr);
  if (node >= 0) {
    std::unordered_set<uint64_t>& sent = sent_programs_[node];
    if (sent.count(program.hash())) {
      ++counters_.continuations_by_hash;
      return;
    }
    if (sent.size() >= options_.sent_program_entries) sent.clear();
    sent.insert(program.hash());
  }
  ++counters_.continuations_with_code;
  m->program = program.encoded();
}

void MemNodeService::Finish(TraversalRequest&& req, const TraversalOutcome& out, const SendFn& send) {
  Running& running = running_[req.id];
  TraversalMessage m = std::move(running.message);
  // A fresh time for this answer, which the admission it makes room for
  // shares (Now()).
  Fresh();
  counters_.engine_ns += static_cast<uint64_t>(std::chrono::nanoseconds(Now() - running.admitted).count());
  free_running_.push_back(static_cast<uint32_t>(req.id));
  const StoreVisit visit{m.request_id, m.iterations};  // as it arrived
  m.kind = MessageKind::kResponse;
  m.status = out.status;
  m.cur_ptr = req.state.cur_ptr;
  m.iterations = req.state.iterations;
  m.fault_pc = out.fault_pc;
  m.fault_addr = out.fault_addr;
  m.scratch = std::move(req.state.scratch);
  m.program.clear();
  m.program_hash = req.program->hash();
  counters_.iterations += out.iterations;
  if (out.status == TraversalStatus::kNotLocal) {
    ++counters_.not_local;
    if (!(m.flags & kFlagPulseAcc)) AttachProgramIfNeeded(*req.program, &m);
  }
  if (IsFault(out.status)) ++counters_.faults;
  if (m.flags & kFlagHasStore) {
    Remember(visit, m);
    if (record_) record_->Finish(visit.first, visit.second, m);
  }
  ++counters_.responses;
  send(std::move(m));
}

uint64_t MemNodeService::Poll(const SendFn& send, uint64_t budget) {
  // The requests handled since the last Poll() were stamped with the
  // first one's arrival; the admissions below read the time anew, and so
  // does the first Handle() after this call.
  Fresh();
  uint64_t executed = 0;
  Admit();
  if (threads_ != nullptr) {
    // The pipelines run on their own; here their finished traversals are
    // answered and their workspaces refilled.
    executed = threads_->Drain([&](TraversalRequest&& req, const TraversalOutcome& out) {
      Finish(std::move(req), out, send);
    });
    Admit();
  } else if (pipeline_->active() > 0) {
    executed = pipeline_->Run(
        [&](TraversalRequest&& req, const TraversalOutcome& out) {
          ++served_;
          Finish(std::move(req), out, send);
          Admit();
        },
        budget);
  }
  Fresh();
  return executed;
}

}  // namespace pulse
