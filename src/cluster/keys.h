// The cluster's keys on disk: the secret every node and administrator proves
// when it connects, and each tenant's credential (docs/security.md).
//
// EnsureClusterKeys is what `pulse cluster up` (and the test rack) runs
// before starting nodes: it creates the secret if its file does not exist
// (32 random bytes, mode 0600) and writes every tenant's credential file
// (net::DeriveTenantKey of the secret, mode 0600), replacing a stale one.
// SecretEnvironment gives the variable that hands the secret to the node
// processes and to this process's own Workers
// (net::kSecretFileEnvironmentVariable).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cluster/config.h"
#include "pulse/status.h"

namespace pulse::cluster {

// Creates the secret if missing and (re)writes the tenant credentials.
// Errors: IoError naming the file, InvalidArgument for an existing secret
// file that is not a valid key file (net::ReadKeyFile).
Status EnsureClusterKeys(const ClusterConfig& config);

// {$PULSE_CLUSTER_SECRET_FILE, absolute path of the secret} if the secret
// file exists, else nothing (nodes and tools then connect without
// credentials, and a cluster that has a secret refuses them).
std::vector<std::pair<std::string, std::string>> SecretEnvironment(const ClusterConfig& config);

// Sets SecretEnvironment(config) in this process's environment unless
// $PULSE_CLUSTER_SECRET_FILE is set already, so that the Workers this
// process creates afterwards (a control session, a CPU-node client) prove
// the cluster's secret.  For the command-line tools; not thread-safe.
void UseClusterSecret(const ClusterConfig& config);

}  // namespace pulse::cluster
