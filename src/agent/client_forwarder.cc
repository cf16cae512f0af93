#include "agent/client_forwarder.h"

#include <cstring>
#include <future>
#include <optional>

#include "client/client_internal.h"

namespace pulse::agent {

uint64_t PieceCount(uint64_t bytes, uint64_t piece) { return bytes <= piece ? 1 : (bytes + piece - 1) / piece; }

bool FitsWindow(uint64_t outstanding, uint64_t bytes, uint64_t window) {
  return outstanding == 0 || outstanding + bytes <= window;
}

namespace {

bool Urgent(farmem::PageClass cls) {
  return cls == farmem::PageClass::kOnDemand || cls == farmem::PageClass::kWriteBack;
}

}  // namespace

ClientForwarder::ClientForwarder(const ForwarderOptions& options, DeliverFn deliver)
    : options_(options), deliver_(std::move(deliver)) {}

ClientForwarder::~ClientForwarder() { Stop(); }

Status ClientForwarder::Start(const ClientOptions& options) {
  std::promise<Status> started;
  std::future<Status> outcome = started.get_future();
  thread_ = std::thread([this, options, &started] {
    auto c = Client::Connect(options);
    if (!c.ok()) return started.set_value(c.status());
    client_ = std::move(*c);
    auto m = farmem::MemoryAgentClient::Create(client_.get(), options_.memory_timeout);
    if (!m.ok()) return started.set_value(m.status());
    memory_ = std::move(*m);
    memory_nodes_ = client_->memory_nodes();
    worker_.store(&ClientInternal::worker(*client_));
    started.set_value(Status::Ok());
    Loop();
    {
      // Submit and Stop wake the worker under mu_: none may reach it once
      // it is gone (the destructor's Stop comes after this thread's end).
      std::lock_guard<std::mutex> lock(mu_);
      worker_.store(nullptr);
    }
    memory_.reset();
    client_.reset();
  });
  Status s = outcome.get();  // Client::Connect is bounded by its connect_timeout
  if (!s.ok()) thread_.join();
  return s;
}

void ClientForwarder::Stop() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (net::Worker* w = worker_.load()) w->Wake();
  }
  if (thread_.joinable()) thread_.join();
}

void ClientForwarder::Submit(std::vector<ForwardOp> ops) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (ForwardOp& op : ops) inbox_.push_back(std::move(op));
    has_inbox_.store(true);
    if (net::Worker* w = worker_.load()) w->Wake();
  }
}

void ClientForwarder::Loop() {
  EventLoop& loop = ClientInternal::loop(*client_);
  while (!stop_.load()) {
    std::vector<ForwardOp> ops;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ops.swap(inbox_);
      has_inbox_.store(false);
    }
    for (ForwardOp& op : ops) StartOp(std::move(op));
    if (!ops.empty() || pump_) Pump();
    if (ops.empty())
      (void)loop.DriveUntil([this] { return stop_.load() || has_inbox_.load() || pump_; }, std::chrono::milliseconds(1000));
    else
      client_->Poll();
  }
}

void ClientForwarder::StartOp(ForwardOp op) {
  const uint64_t tag = op.tag;
  const auto taken = std::chrono::steady_clock::now();
  switch (op.kind) {
    case ForwardOp::Kind::kRead:
      return Read(op.addr, op.bytes, op.cls, [this, tag, taken](Result<std::vector<uint8_t>> r) {
        ForwardResult f{tag, r.status(), 0, {}, taken, std::chrono::steady_clock::now()};
        if (r.ok()) f.data = std::move(*r);
        deliver_(std::move(f));
      });
    case ForwardOp::Kind::kWrite:
      return Write(op.addr, std::move(op.data), op.cls, [this, tag, taken](Result<uint64_t> r) {
        deliver_({tag, r.status(), r.ok() ? *r : 0, {}, taken, std::chrono::steady_clock::now()});
      });
    case ForwardOp::Kind::kPreload:
      return memory_->PreloadAsync(op.addr, op.bytes, op.file, op.file_offset, [this, tag](Result<uint64_t> r) {
        deliver_({tag, r.status(), r.ok() ? *r : 0, {}});
      });
    case ForwardOp::Kind::kAllocate: {
      Result<uint64_t> r = client_->Allocate(op.bytes);
      return deliver_({tag, r.status(), r.ok() ? *r : 0, {}});
    }
    case ForwardOp::Kind::kFree:
      return deliver_({tag, client_->Free(op.addr), 0, {}});
  }
}

void ClientForwarder::Read(uint64_t addr, uint64_t bytes, farmem::PageClass cls,
                           farmem::MemoryAgentClient::ReadDone done) {
  const uint64_t piece = options_.max_message_bytes;
  if (bytes <= piece) return Enqueue({false, addr, bytes, cls, {}, std::move(done), {}});
  // The pieces land in one buffer; done once, with it or the first error.
  struct Joint {
    std::vector<uint8_t> data;
    uint64_t left = 0;
    Status error;
    farmem::MemoryAgentClient::ReadDone done;
  };
  auto joint = std::make_shared<Joint>();
  joint->data.resize(bytes);
  joint->left = PieceCount(bytes, piece);
  joint->done = std::move(done);
  for (uint64_t at = 0; at < bytes; at += piece) {
    const uint64_t n = std::min(piece, bytes - at);
    Enqueue({false, addr + at, n, cls, {}, [joint, at, n](Result<std::vector<uint8_t>> r) {
               if (!r.ok() && joint->error.ok()) joint->error = r.status();
               if (r.ok() && r->size() == n) {
                 std::memcpy(joint->data.data() + at, r->data(), n);
               } else if (r.ok() && joint->error.ok()) {
                 joint->error = Status::Internal("memory agent: a read piece came back short");
               }
               if (--joint->left > 0) return;
               if (!joint->error.ok()) return joint->done(joint->error);
               joint->done(std::move(joint->data));
             }, {}});
  }
}

void ClientForwarder::Write(uint64_t addr, std::vector<uint8_t> data, farmem::PageClass cls,
                            farmem::MemoryAgentClient::Done done) {
  const uint64_t piece = options_.max_message_bytes;
  const uint64_t bytes = data.size();
  if (bytes <= piece) return Enqueue({true, addr, bytes, cls, std::move(data), {}, std::move(done)});
  struct Joint {
    uint64_t left = 0, written = 0;
    Status error;
    farmem::MemoryAgentClient::Done done;
  };
  auto joint = std::make_shared<Joint>();
  joint->left = PieceCount(bytes, piece);
  joint->done = std::move(done);
  for (uint64_t at = 0; at < bytes; at += piece) {
    const uint64_t n = std::min(piece, bytes - at);
    std::vector<uint8_t> part(data.begin() + static_cast<ptrdiff_t>(at), data.begin() + static_cast<ptrdiff_t>(at + n));
    Enqueue({true, addr + at, n, cls, std::move(part), {}, [joint](Result<uint64_t> r) {
               if (!r.ok() && joint->error.ok()) joint->error = r.status();
               if (r.ok()) joint->written += *r;
               if (--joint->left > 0) return;
               if (!joint->error.ok()) return joint->done(joint->error);
               joint->done(joint->written);
             }});
  }
}

void ClientForwarder::Enqueue(Piece piece) {
  const std::optional<uint32_t> node = client_->NodeOf(piece.addr);
  if (!node) return StartPiece(UINT32_MAX, std::move(piece));  // the memory agent's client reports it
  NodeQueue& q = nodes_[*node];
  (Urgent(piece.cls) ? q.urgent : q.background).push_back(std::move(piece));
}

void ClientForwarder::Pump() {
  pump_ = false;
  for (auto& [node, q] : nodes_) {
    for (;;) {
      std::deque<Piece>& from = !q.urgent.empty() ? q.urgent : q.background;
      if (from.empty() || !FitsWindow(q.outstanding, from.front().bytes, options_.node_window_bytes)) break;
      Piece p = std::move(from.front());
      from.pop_front();
      StartPiece(node, std::move(p));
    }
  }
}

void ClientForwarder::StartPiece(uint32_t node, Piece piece) {
  const uint64_t bytes = piece.bytes;
  auto it = nodes_.find(node);
  if (it != nodes_.end()) it->second.outstanding += bytes;
  // The completion frees the window; starting more waits for the loop
  // (completions run inside the client's waits).
  auto release = [this, node, bytes] {
    auto n = nodes_.find(node);
    if (n == nodes_.end()) return;
    n->second.outstanding -= bytes;
    pump_ = true;
  };
  if (piece.write) {
    return memory_->WriteAsync(piece.addr, std::move(piece.data), piece.cls,
                               [release, done = std::move(piece.write_done)](Result<uint64_t> r) {
                                 release();
                                 done(std::move(r));
                               });
  }
  memory_->ReadAsync(piece.addr, bytes, piece.cls,
                     [release, done = std::move(piece.read_done)](Result<std::vector<uint8_t>> r) {
                       release();
                       done(std::move(r));
                     });
}

}  // namespace pulse::agent
