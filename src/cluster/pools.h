// The memory nodes' pools as objects on this host: which exist, how large
// they are and whether a live process uses them (`pulse cluster pools |
// clean`, and `down`, which never removes a pool in use).
//
// A memory node's pool is a POSIX shared-memory object (/dev/shm/<name>),
// and the node holds an exclusive flock on it for as long as it runs
// (src/memnode/pool.h); the kernel drops the lock when the process ends.  A
// pool is therefore in use exactly while some process holds that lock.  It
// is read from /proc/locks, without touching the lock itself, so looking
// never makes a node that is starting find its pool "in use".
//
// Stateless functions; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pulse/status.h"

namespace pulse::cluster {

// The prefix of the pool names the launcher gives (NamePools in
// launcher.cc): "/pulse-<cluster>-<node>-<pid>-<stamp>".
constexpr const char* kPoolPrefix = "/pulse-";

struct PoolUse {
  bool exists = false;
  uint64_t bytes = 0;  // the object's size (pool and metadata)
  bool in_use = false;  // a process holds its lock (or that cannot be told: then true)
  pid_t user = 0;       // the holder's pid as /proc/locks gives it; 0 if unknown
};

// How pool `shm_name` ("/name", as for shm_open) is used now.
PoolUse PoolUseOf(const std::string& shm_name);

struct PoolInfo {
  std::string name;  // "/name"
  PoolUse use;
};

// Every pool object on this host whose name starts with `prefix` ("/..."),
// sorted by name.  Errors: IoError if /dev/shm cannot be read.
Result<std::vector<PoolInfo>> ListPools(const std::string& prefix = kPoolPrefix);

// Unlinks pool `shm_name` unless a process uses it.  Errors:
// FailedPrecondition naming the pool and its user if in use; NotFound if it
// does not exist; IoError.
Status RemoveUnusedPool(const std::string& shm_name);

}  // namespace pulse::cluster
