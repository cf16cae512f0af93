// EnvironmentSnapshot: the process environment as it was when the snapshot
// was taken, put back when it goes.
//
// Cluster tests make this process speak what the nodes speak by setting
// variables (the cluster secret's file, UCX transports) that every child
// process then inherits.  A fixture that takes a snapshot in its setup and
// drops it in its teardown keeps one test's cluster secret from reaching
// the next test's `pulse cluster` commands, which read the variable before
// their config (docs/security.md).
//
// Not thread-safe: the environment is the process's; take and drop
// snapshots while no other thread reads or writes it.
#pragma once

#include <string>
#include <vector>

namespace pulse::testing {

class EnvironmentSnapshot {
 public:
  EnvironmentSnapshot();
  ~EnvironmentSnapshot();  // unsets what was set since, restores the rest

  EnvironmentSnapshot(const EnvironmentSnapshot&) = delete;
  EnvironmentSnapshot& operator=(const EnvironmentSnapshot&) = delete;

 private:
  std::vector<std::string> entries_;  // "NAME=value" as in environ
};

}  // namespace pulse::testing
