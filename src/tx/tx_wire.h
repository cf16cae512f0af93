// The wire of the chain-replicated transactions (docs/tx.md): what a client
// sends a chain's replicas (kAmTxRequest), what replicas send each other on
// the same id, and what a replica answers a client (kAmTxReply).  Every
// message starts with a Header; all integers are little-endian.  Decoding
// is strict: every count and length is checked against the bytes present
// (never used to size anything first), and nothing may be left over.
//
// The log record of a transaction is the paper's `[n][(data, len, offset) x
// n]` (seed 002 IV-B): u32 n, then n times {u64 offset, u32 len, len
// bytes}; offsets are relative to the replica's region of the chain.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pulse/memory.h"
#include "pulse/status.h"

namespace pulse::tx {

inline constexpr uint16_t kAmTxRequest = 50;  // client -> replica, replica -> replica
inline constexpr uint16_t kAmTxReply = 51;    // replica -> client

// Bounds a replica enforces (larger is malformed).
inline constexpr uint32_t kMaxTuples = 64;         // reads, and writes, per transaction
inline constexpr uint32_t kMaxValueBytes = 4096;   // one read or write
inline constexpr uint32_t kMaxMembers = 16;        // replicas of a chain

enum class Kind : uint8_t {
  kExecute = 1,    // client -> head: a transaction
  kForward = 2,    // replica -> successor: a logged transaction (or a backfilled one)
  kAck = 3,        // successor -> predecessor: committed up to the tail
  kConfigure = 4,  // client -> replica: the chain's members (adopted if its epoch is newer)
  kStatus = 5,     // client -> replica: its last logged sequence number for the chain
};

inline constexpr uint8_t kFlagNoLock = 1;    // kExecute: the HyperLoop-like baseline's writes (no locks)
inline constexpr uint8_t kFlagBackfill = 2;  // kForward: a committed record for a rejoining replica (no ack)
// kExecute: the client sent this request before (same id) and had no answer;
// a replica that cannot tell whether it committed answers OutcomeUnknown.
inline constexpr uint8_t kFlagRetry = 4;

struct Header {
  Kind kind = Kind::kExecute;
  uint8_t flags = 0;
  TenantId tenant = 0;
  uint64_t request_id = 0;  // the client's id (kExecute, kConfigure, kStatus); 0 between replicas
  uint64_t chain = 0;       // the chain's id (its head region's far address at creation)
};

struct ReadOp {
  uint64_t offset = 0;
  uint32_t length = 0;
};
struct WriteOp {
  uint64_t offset = 0;
  std::vector<uint8_t> data;
};

struct Member {
  uint32_t node = 0;
  uint64_t region = 0;  // far address of this replica's region
};

struct ExecuteBody {
  std::vector<ReadOp> reads;
  std::vector<WriteOp> writes;
};
// The result a transaction's client gets: every replica keeps it (in its
// log and its window of committed ids) so that any of them can answer a
// retry after the head died.
using Values = std::vector<std::vector<uint8_t>>;
struct ForwardBody {
  uint64_t seq = 0;
  uint64_t request_id = 0;  // the client's id of the transaction
  // Every sequence number <= stable is committed on every member (the
  // head's acknowledged prefix): members may truncate their logs up to it.
  uint64_t stable = 0;
  Values values;                // the reads' values the head answers with
  std::vector<WriteOp> writes;  // the log record
};
struct AckBody {
  uint64_t seq = 0;
  uint32_t code = 0;  // StatusCodeToWire
};
struct ConfigureBody {
  uint32_t epoch = 0;
  uint64_t region_bytes = 0;
  std::vector<Member> members;  // head first
  // A member rejoining (UINT32_MAX: none) and the last sequence number it
  // holds: its predecessor backfills every committed record after it.
  uint32_t joiner = UINT32_MAX;
  uint64_t joiner_seq = 0;
};

struct Reply {
  uint64_t request_id = 0;
  uint32_t code = 0;        // StatusCodeToWire
  uint64_t seq = 0;         // kExecute: the transaction's sequence number; kStatus: the last logged
  Values values;            // kExecute: the reads' values, in order
  std::string message;      // the error's message (code != OK)
};

std::vector<uint8_t> EncodeExecute(const Header& h, const ExecuteBody& b);
std::vector<uint8_t> EncodeForward(const Header& h, const ForwardBody& b);
std::vector<uint8_t> EncodeAck(const Header& h, const AckBody& b);
std::vector<uint8_t> EncodeConfigure(const Header& h, const ConfigureBody& b);
std::vector<uint8_t> EncodeStatus(const Header& h);
std::vector<uint8_t> EncodeReply(const Reply& r);
// The log record of `writes` (`[n][(offset, len, data) x n]`).
void AppendRecord(const std::vector<WriteOp>& writes, std::vector<uint8_t>* out);
// A transaction's result as a replica logs and forwards it: u32 n, then n
// times {u32 len, len bytes} (at most kMaxTuples values of kMaxValueBytes).
void AppendValues(const Values& values, std::vector<uint8_t>* out);
// The values at the start of `in`; `used` gets their size.
Result<Values> DecodeValues(std::span<const uint8_t> in, size_t* used);

// Decoding.  Errors are InvalidArgument naming the field ("bad n",
// "length ... past the end", ...); the counters of a replica key on
// MalformedKind.
enum class Malformed : uint8_t { kNone, kHeader, kCount, kLength, kTrailing };
struct DecodeError {
  Malformed what = Malformed::kNone;
  Status status;
};

// The header of any request; `rest` is left at the body.
Result<Header> DecodeHeader(std::span<const uint8_t> in, std::span<const uint8_t>* rest);
// Bodies; on failure `error` says which kind of malformation it was.
Result<ExecuteBody> DecodeExecute(std::span<const uint8_t> body, Malformed* error);
Result<ForwardBody> DecodeForward(std::span<const uint8_t> body, Malformed* error);
Result<AckBody> DecodeAck(std::span<const uint8_t> body);
Result<ConfigureBody> DecodeConfigure(std::span<const uint8_t> body);
Result<Reply> DecodeReply(std::span<const uint8_t> in);
// A log record (`[n][...]`) at the start of `in`; `used` gets its size.
Result<std::vector<WriteOp>> DecodeRecord(std::span<const uint8_t> in, size_t* used, Malformed* error);

}  // namespace pulse::tx
