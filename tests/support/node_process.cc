#include "support/node_process.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

namespace pulse::testing {

namespace {

// A fresh log file; the path.
std::string TemporaryLog() {
  char path[] = "/tmp/pulse-node-test-XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  return path;
}

cluster::ChildProcess StartOrFail(const std::vector<std::string>& args, const std::string& log) {
  cluster::SpawnOptions so;
  so.argv = {PULSE_BINARY};
  so.argv.insert(so.argv.end(), args.begin(), args.end());
  so.log_path = log;
  so.die_with_parent = true;
  so.parent_death_signal = SIGKILL;
  auto p = cluster::ChildProcess::Start(so);
  if (!p.ok()) {
    ADD_FAILURE() << "cannot start " << PULSE_BINARY << ": " << p.status().ToString();
    return cluster::ChildProcess();
  }
  return std::move(*p);
}

}  // namespace

NodeProcess::NodeProcess(const std::vector<std::string>& args) : NodeProcess(args, TemporaryLog()) {}

NodeProcess::NodeProcess(const std::vector<std::string>& args, std::string log)
    : cluster::ChildProcess(StartOrFail(args, log)), own_log_(std::move(log)) {}

NodeProcess::~NodeProcess() {
  Kill();
  if (!own_log_.empty()) unlink(own_log_.c_str());
}

}  // namespace pulse::testing
