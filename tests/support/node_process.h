// One `pulse` process (PULSE_BINARY) owned by a test: a cluster::ChildProcess
// (src/cluster/process.h) with its output in a log file.  It is SIGKILLed
// and reaped when the object goes away, and when the test process dies
// (PR_SET_PDEATHSIG).  Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "cluster/process.h"

namespace pulse::testing {

class NodeProcess : public cluster::ChildProcess {
 public:
  // Runs `PULSE_BINARY args...` with stdout and stderr in a temporary log
  // that goes with this object.  A failure to start fails the test (the
  // object then holds no process: Wait() returns -1).
  explicit NodeProcess(const std::vector<std::string>& args);
  // Owns a process started elsewhere (LocalRack: the launcher's command
  // line, a log in the rack's directory that stays).
  explicit NodeProcess(cluster::ChildProcess process) : cluster::ChildProcess(std::move(process)) {}
  ~NodeProcess();
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

 private:
  NodeProcess(const std::vector<std::string>& args, std::string log);

  std::string own_log_;  // removed by the destructor
};

}  // namespace pulse::testing
