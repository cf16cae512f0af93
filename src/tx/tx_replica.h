// A memory node's replica of chain-replicated transactions (docs/tx.md,
// seed 002 IV-B): a memory-node extension on kAmTxRequest that
//   - as the head of a chain takes a client's transaction, validates it
//     (named errors, counted), queues it behind the per-key locks of the
//     keys it touches (64-byte blocks of the chain's region, in arrival
//     order), reads its reads, gives it the chain's next sequence number,
//     logs it and forwards it to the next live member;
//   - as a middle member logs what it is forwarded (in sequence order:
//     early ones wait, duplicates are acknowledged, never applied again)
//     and forwards it on; as the tail logs, applies (commits) and
//     acknowledges; an acknowledgement travels back, each member applies
//     on it, and the head answers the client (with the reads' values) and
//     releases the locks;
//   - skips a member that died (the switch lists it dead, or its
//     connection failed): what it had forwarded there goes to the member
//     after it, or commits here if this node is now the tail;
//   - on restart replays its log (up to its last certain point; the pool
//     kept the region) and, on a configuration naming it as a rejoining
//     member, is backfilled by its predecessor;
//   - remembers each committed transaction's client id and result (from
//     its log, in a bounded window), so that when the head dies and the
//     client retries at the next live member, that member (taking over as
//     head once the members before it are dead) answers a committed
//     transaction with its original result instead of running it again;
//   - compacts its log once it is large, dropping what every member has
//     committed.
// Group commit: appends only write; at the end of each pass of the node's
// loop one fdatasync makes them durable, and only then do that pass's
// acknowledgements and answers leave (tx_log.h); its forwards leave just
// before the sync.  Between replicas they go into the other's ring where
// there is one (replica_rings.h), else as messages.
//
// Not thread-safe: the node's network thread calls it (extension.h).
#pragma once

#include <memory>
#include <string>

#include "memnode/extension.h"
#include "pulse/status.h"
#include "tx/tx_wire.h"

namespace pulse::tx {

struct TxReplicaOptions {
  // The durable log's file.  Kept across a crash (the node re-attaches its
  // pool and replays the log); emptied when the pool is fresh; removed on
  // a clean exit (the pool goes too).
  std::string log_path;
  // false: appends are not fdatasync'd (page cache only; for measuring the
  // protocol apart from the disk, as the papers' NVM).  `pulse memnode`
  // takes it from $PULSE_TX_LOG_SYNC=none.
  bool sync = true;
  // Committed records kept in memory for backfilling a rejoining member
  // (the last history_records of each chain, fewer if their values and
  // writes exceed history_bytes); the log also keeps at least
  // history_records of each chain's last records.
  size_t history_records = 1 << 16;
  uint64_t history_bytes = 64 << 20;
  // The window of committed transactions whose results a replica keeps to
  // answer a client's retry (after the head died) with the original
  // result: the last `committed_ids` of each chain, fewer if their reads'
  // values exceed `committed_bytes`.  A retry older than the window is
  // answered OutcomeUnknown.
  size_t committed_ids = 1 << 16;
  uint64_t committed_bytes = 16 << 20;
  // The log is compacted when it exceeds this many bytes: records every
  // member has committed (the head's stable point), except each chain's
  // last history_records, are dropped.  0: never.  `pulse memnode` takes
  // it from $PULSE_TX_LOG_COMPACT_BYTES.
  uint64_t compact_bytes = 64 << 20;
  // The most members a chain may have here (a configuration naming more is
  // refused: FailedPrecondition).  `pulse memnode` takes it from
  // $PULSE_TX_MAX_CHAIN (the cluster TOML's tx.chain_length).
  uint32_t max_members = kMaxMembers;
  // What replicas send each other (forwards, acknowledgements, backfills)
  // goes into the other replica's ring by a one-sided write where the
  // transport has one-sided puts (shared memory on one host, RDMA), else,
  // or with false, as messages (docs/tx.md "Transport").  `pulse
  // memnode` takes it from $PULSE_TX_REPLICA_PATH (auto | am; the cluster
  // TOML's tx.replica_path).
  bool rings_between_replicas = true;
};

memnode::MemNodeExtensionFactory TxExtension(const TxReplicaOptions& options);

// The options of a node's replica logging to `log_path`, from the
// environment `pulse cluster` sets from its [tx] section (docs/tx.md):
// $PULSE_TX_LOG_SYNC (fdatasync | none), $PULSE_TX_LOG_COMPACT_BYTES,
// $PULSE_TX_LOG_KEEP_RECORDS (history_records), $PULSE_TX_MAX_CHAIN
// (max_members), $PULSE_TX_REPLICA_PATH (auto | am: rings_between_replicas),
// $PULSE_TX_COMMITTED_IDS (committed_ids: a small window
// for tests of its edge).  Unset: the defaults.
// Errors: InvalidArgument naming the variable and its value.
Result<TxReplicaOptions> TxReplicaOptionsFromEnv(const std::string& log_path);

}  // namespace pulse::tx
