// pulse::resp::Server: the event loop of `pulse kv serve` — a TCP server
// speaking the Redis protocol (RESP2, RESP3 after HELLO 3) whose data lives
// in a pulse::resp::Keyspace in far memory.
//
// One thread runs everything: epoll over the listening socket and every
// client socket (no thread per connection), the RESP parsers, and the
// commands on the one pulse::Client.  Each loop turn reads what every ready
// connection sent, parses all complete (pipelined) requests, then runs them
// as one batch: the keyspace lock is taken for the batch (if any request
// needs the keyspace; it is kept while requests keep coming, see
// ServerOptions::lock_linger), the keys they name are looked up together
// (Keyspace::Prefetch: one offloaded traversal per key, all in flight at
// once), the requests run in arrival order per connection, round robin
// across connections, their record writes are in flight together and
// settled before the replies are written back.  Nothing spins: with no
// request pending the loop waits lock_linger with the lock, then releases it
// and sleeps in epoll_wait without a timeout (the Client needs no progress
// between batches: no traversal is pending and no lock is held).  So a
// second server on the same keyspace waits at most one batch (bounded by
// ServerOptions::max_batch) plus Keyspace's yield_check for the lock.
//
// Failure handling: unknown commands and wrong arity get Redis's error
// replies; a malformed or oversized request (RequestParser limits) gets
// "-ERR Protocol error: ..." and its connection is closed once the reply is
// written; a far-memory failure (dead memory node: the client's retry
// budget) gets "-ERR pulse: <status>" for the commands it hit.  Nothing
// waits without a deadline: the lock wait is KeyspaceOptions::lock_timeout.
//
// Thread-safety: Run() on one thread; RequestStop() from any thread or a
// signal handler.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "pulse/client.h"
#include "pulse/resp/keyspace.h"
#include "pulse/resp/parser.h"
#include "pulse/status.h"

namespace pulse::resp {

struct ServerOptions {
  std::string listen = "127.0.0.1:6380";  // host:port; port 0 picks a free one
  ParserLimits limits;
  // Requests run in one batch, at most.
  size_t max_batch = 512;
  // How long the server keeps the keyspace lock after a batch while no
  // request is pending (more usually come within it); then it releases it.
  // Another server that asks for it gets it at the end of the current batch
  // (Keyspace::End).
  std::chrono::milliseconds lock_linger{5};
  // A connection whose unsent replies exceed this is not read from until
  // they drain (backpressure on pipelining clients).
  size_t max_output_bytes = 64ull << 20;
  size_t max_connections = 10000;
};

struct ServerCounters {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;
  uint64_t commands = 0;
  uint64_t batches = 0;            // lock holds
  uint64_t protocol_errors = 0;
  uint64_t far_errors = 0;         // "-ERR pulse:" replies
  // Where batches' time goes (microseconds, summed over batches): taking the
  // lock and re-reading the directory (Keyspace::Begin), the prefetch
  // traversals, running the commands, settling their writes and ending the
  // batch (Keyspace::End), sending the replies.  INFO's Pulse section shows
  // them; `pulse bench resp` reports them per run.
  uint64_t batch_requests = 0;
  uint64_t us_lock = 0, us_prefetch = 0, us_run = 0, us_settle = 0, us_reply = 0;
};

class Server {
 public:
  // Binds and listens.  `client` and `keyspace` must outlive the server.
  // Errors: InvalidArgument (listen address), IoError (socket, bind).
  static Result<std::unique_ptr<Server>> Listen(Client* client, Keyspace* keyspace, const ServerOptions& options);
  ~Server();

  // The port bound (useful with port 0).
  uint16_t port() const;
  // Serves until RequestStop().  Errors: IoError if epoll fails.
  Status Run();
  // Makes Run() return (async-signal-safe).
  void RequestStop();

  const ServerCounters& counters() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pulse::resp
