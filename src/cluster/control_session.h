// Control operations (include/pulse/cluster.h: stats, shutdown, ...) sent to
// nodes by address, for `pulse cluster`, the benchmarks and the demo.  One
// UCX worker; one endpoint per address, opened on first use and reopened
// after a failure.  Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/control_client.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::cluster {

class ControlSession {
 public:
  // `transports`: UCX transport list for this worker (empty: UCX_TLS or UCX's choice).
  static Result<std::unique_ptr<ControlSession>> Create(const std::string& transports = "");
  ~ControlSession();

  // Sends {"op": op} (plus `fields`) to the node at "host:port" and waits for
  // its answer; the whole call, connecting included, takes at most `timeout`.
  // Errors: Unavailable (cannot connect / peer gone), Timeout, InvalidArgument
  // (the node refused: its "error").
  Result<nlohmann::json> Call(const std::string& address, const std::string& op, net::Duration timeout,
                              nlohmann::json fields = nlohmann::json::object());

  // Drops the connection to `address` (if any).
  void Disconnect(const std::string& address);

 private:
  ControlSession() = default;
  std::unique_ptr<net::Worker> worker_;
  std::unique_ptr<ControlClient> control_;
  std::map<std::string, net::EndpointId> endpoints_;
};

// Connecting to a wildcard listen address means connecting to this host:
// "0.0.0.0" and "::" become "127.0.0.1"; other hosts are returned as is.
std::string ConnectHost(const std::string& host);

}  // namespace pulse::cluster
