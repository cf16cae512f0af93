// pulse::tx::Chain: chain-replicated transactions over memory nodes (seed
// 002 IV-B; docs/tx.md).
//
// A chain is an ordered list of memory nodes (head -> ... -> tail), each
// holding a replica of one region of far memory that this client's tenant
// allocated on it.  A transaction names reads and writes by offset in the
// region; it travels as one request to the head, which serializes it behind
// per-key locks (64-byte blocks, arrival order), reads its reads, logs it
// durably and forwards it down the chain; the tail commits, and the
// acknowledgement travels back (each replica applies the writes on it) to
// the head, which answers with the reads' values.  Pure reads of committed
// data are one-sided reads at the tail (Read).
//
// Failures: a member that dies is skipped by its predecessor (what it had
// forwarded there goes to the next member, or commits at the predecessor
// if that is now the tail), so in-flight transactions commit on every live
// replica.  If the head dies, the client re-sends its unanswered requests
// (same ids) to the next live member, which takes over as head once the
// members before it are dead to it too; every member remembers the ids and
// results of the transactions it committed (a bounded window, rebuilt from
// its log), so a retry of a committed transaction gets its original result
// and is never applied twice.  Where the outcome cannot be known (the
// window forgot it, or no member answered before the deadline) a writing
// transaction ends with OutcomeUnknown, never with a wrong answer.
// Refresh() drops dead members from the configuration; Rejoin() adds a
// restarted member back as the tail after its predecessor backfilled it.
//
// The HyperLoop-like baseline (ExecuteHyperLoop): the same chain, replicas
// and logs, but the client drives one replicated write per key, in
// sequence (each a one-write chain walk without locks), and reads each key
// with its own one-sided read at the tail.
//
// Thread-safety: none; use a Chain from the thread that uses its Client.
// One Chain per Client (it takes the Client's kAmTxReply handler).
// The Client must outlive the Chain and must allocate with
// AllocationPolicy::kPartitioned (the regions are placed on named nodes).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::tx {

struct TxRead {
  uint64_t offset = 0;
  uint32_t length = 0;  // 1..4096
};
struct TxWrite {
  uint64_t offset = 0;
  std::vector<uint8_t> data;  // 1..4096 bytes
};
// At most 64 reads and 64 writes.
struct Transaction {
  std::vector<TxRead> reads;
  std::vector<TxWrite> writes;
};
struct TxOutcome {
  uint64_t seq = 0;                          // the chain's sequence number of the writes (0: none)
  std::vector<std::vector<uint8_t>> values;  // the reads' values, in order
};

struct ChainMember {
  uint32_t node = 0;
  uint64_t region = 0;  // far address of this member's region
};
// What another client of the same tenant needs to use the chain (Attach).
struct ChainHandle {
  uint64_t id = 0;  // the head region's address at creation
  uint64_t region_bytes = 0;
  uint32_t epoch = 0;
  std::vector<ChainMember> members;  // head first
};

struct ChainOptions {
  std::vector<uint32_t> replicas;  // memory node ids, head first (Create)
  uint64_t region_bytes = 1 << 20;
  // A request unanswered for request_timeout is sent again (same id: the
  // head of the moment answers a re-send without running it twice),
  // max_attempts in all: a transaction's deadline is about
  // request_timeout * max_attempts.
  std::chrono::milliseconds request_timeout{1000};
  uint32_t max_attempts = 5;
};

struct ChainCounters {
  uint64_t transactions = 0;      // Execute / ExecuteAsync calls
  uint64_t messages_sent = 0;     // requests sent to replicas (re-sends included)
  uint64_t replies = 0;           // answers received
  uint64_t retransmissions = 0;
  uint64_t one_sided_reads = 0;   // Read / ReadReplica
  uint64_t errors = 0;            // transactions that completed with an error
};

class Chain {
 public:
  using Callback = std::function<void(Result<TxOutcome>)>;

  // Allocates a zeroed region of options.region_bytes on each replica and
  // configures them as a chain (epoch 1).  Errors: InvalidArgument (no
  // replicas, a repeated one, a client that does not allocate by node),
  // those of Allocate/Write, and a replica's refusal.
  static Result<std::unique_ptr<Chain>> Create(Client* client, const ChainOptions& options);
  // Uses the chain of `handle` (created by another client of this tenant).
  static Result<std::unique_ptr<Chain>> Attach(Client* client, const ChainHandle& handle, const ChainOptions& options);
  ~Chain();
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  const ChainHandle& handle() const;

  // Runs `tx` as one request to the head.  Errors (as codes): InvalidArgument
  // (a malformed transaction: bad counts or lengths), OutOfRange (an offset
  // outside the region), PermissionDenied (not this tenant's chain),
  // FailedPrecondition (the node is not configured for the chain),
  // Unavailable (no live head: nothing was sent), Timeout (a read-only
  // transaction unanswered), OutcomeUnknown (a transaction with writes was
  // sent and neither its result nor a refusal came back before its
  // deadline: it may or may not have committed).
  Result<TxOutcome> Execute(const Transaction& tx);
  // As Execute, without waiting; `done` runs inside a later Poll/WaitAll.
  void ExecuteAsync(const Transaction& tx, Callback done);
  // Drives the client until every ExecuteAsync has completed.  Timeout.
  Status WaitAll(std::chrono::milliseconds timeout);
  size_t pending() const;

  // The HyperLoop-like baseline: one one-sided read per read at the tail,
  // then one replicated one-write walk per write, in sequence.
  Result<TxOutcome> ExecuteHyperLoop(const Transaction& tx);

  // A one-sided read of committed data at the tail.  Errors: those of
  // Client::Read; Unavailable if no member is live.
  Result<std::vector<uint8_t>> Read(uint64_t offset, uint32_t length);
  // A one-sided read of member `node`'s replica (tests compare replicas).
  Result<std::vector<uint8_t>> ReadReplica(uint32_t node, uint64_t offset, uint32_t length);
  // The last sequence number member `node` has logged for this chain.
  Result<uint64_t> LastLogged(uint32_t node);

  // The members this client can reach, head first.
  std::vector<uint32_t> LiveMembers() const;
  // Drops the members this client sees dead (its connection failed) and
  // configures the rest (the next epoch).  OK if nothing changed.
  Status Refresh();
  // Adds `node` (a member dropped by Refresh, restarted: it replayed its
  // log) back as the tail: its predecessor sends it every record it is
  // missing, then forwards to it.  Errors: InvalidArgument (a member
  // already, or never one), a replica's refusal.
  Status Rejoin(uint32_t node);

  const ChainCounters& counters() const;

 private:
  struct Impl;
  explicit Chain(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pulse::tx
