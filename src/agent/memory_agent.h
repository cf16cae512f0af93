// The memory agent (seed 003 III, "memory agent"): what a memory node does
// for far-memory regions, as a memory node extension (memnode/extension.h;
// `pulse memnode` registers it).  On kAmMemAgentRequest (src/farmem/agent_wire.h)
// it
//   kMemPreload  fills a reserved range from a file the node can read (file
//                preloading; zeros past the file's end) or with zeros (an
//                anonymous region is zero-filled whatever the allocator
//                left there);
//   kMemRead     answers the bytes of a range;
//   kMemWrite    stores bytes into a range;
// each only inside a range of the caller's tenant with the permission it
// needs (the node's range table), and counts operations and bytes by traffic
// class (on-demand, prefetch, write-back, static load; preloads on their
// own), under "farmem" in the node's "stats" (so in `pulse cluster status`).
// Reservation itself is the node's allocator (the `alloc` control call,
// pulse::Client::Allocate): the memory agent serves what it reserved.
//
// A preload runs on the node's network thread: a region of several GB is
// preloaded in chunk-sized requests (the offload agent sends one per chunk),
// so the node answers other callers in between.
#pragma once

#include "memnode/extension.h"

namespace pulse::agent {

memnode::MemNodeExtensionFactory MemoryAgentExtension();

}  // namespace pulse::agent
