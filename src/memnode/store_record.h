// The memory node's durable record of STORE-bearing requests, in the pool's
// metadata area after the AllocationJournal, so that a node restarted after
// a crash never silently runs such a request twice.  The in-memory duplicate
// filter (MemNodeService) is lost in a crash; a client that did not get the
// answer before the crash retransmits the same request to the restarted
// node.  The record tells the restarted node what an earlier process did:
//   - the request finished and its response fits in a slot: the response is
//     sent again (kAnswered);
//   - it was begun and not finished (the crash came while it ran: some of
//     its STOREs may have landed), or its response did not fit: the request
//     is refused with TraversalStatus::kOutcomeUnknown (kUnknown);
//   - no record: it never ran here (kNone), run it.
//
// Layout: a header (magic, version, slots, node), then a ring of 512-byte
// slots, each {sequence, request id, iterations on arrival, program hash,
// cur_ptr on arrival, state, response bytes, response}.  A slot is reused
// oldest first; its state is cleared first and written last (release
// stores), so a crash in the middle of an update leaves the slot empty or
// whole.  The ring holds the last `slots` STORE visits: a retransmission
// arrives within the client's retry budget (seconds), long before that many
// newer visits.
//
// Not thread-safe: the memory node's thread uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "pulse/protocol.h"

namespace pulse::memnode {

class StoreRecord {
 public:
  static constexpr uint32_t kDefaultSlots = 2048;
  static constexpr size_t kSlotBytes = 512;
  enum class Earlier { kNone, kAnswered, kUnknown };

  // Metadata bytes for `slots` slots.
  static size_t BytesFor(uint32_t slots);

  // Uses [area, area + bytes) (at least BytesFor(slots)); the caller keeps it
  // mapped.
  StoreRecord(uint8_t* area, size_t bytes, uint32_t slots, uint32_t node);

  // Takes over what an earlier process of this node recorded (false: the
  // area holds no record of this configuration; then call Format()).
  bool Recover();
  // Clears the area: nothing recorded.
  void Format();

  // `request` (as it arrived, running `program_hash`) is about to run.
  void Begin(const TraversalMessage& request, uint64_t program_hash);
  // The visit (request id, iterations on arrival) of Begin finished with
  // `response`.
  void Finish(uint64_t request_id, uint32_t iterations, const TraversalMessage& response);
  // What an earlier process did with `request`; for kAnswered, `response`
  // is its answer.
  Earlier Lookup(const TraversalMessage& request, uint64_t program_hash, TraversalMessage* response) const;

  // Visits recovered from an earlier process.
  size_t recovered() const { return recovered_.size(); }

 private:
  struct Header;
  struct Slot;
  Slot* SlotAt(uint32_t index) const;
  // (request id, iterations, program hash, cur_ptr): a retransmission
  // repeats all four.
  using Key = std::tuple<uint64_t, uint32_t, uint64_t, uint64_t>;
  struct Outcome {
    bool finished = false;
    std::vector<uint8_t> response;  // encoded; empty if it did not fit
  };

  uint8_t* area_;
  size_t bytes_;
  uint32_t slots_;
  uint32_t node_;
  uint64_t next_seq_ = 1;
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> open_;  // this process's running visits -> slot
  std::map<Key, Outcome> recovered_;                         // an earlier process's visits
};

}  // namespace pulse::memnode
