#!/usr/bin/env bash
# The data-structure, application, exactly-once (memory-node restart, with
# continuations in flight to the restarting node: client_fault_test's
# NodeFailures and FaultyCluster; memnode_process_test's STORE answered across
# a crash) and critical-path counting tests once more with the cluster
# routing every traversal message through
# the switch (`pulse switch` reads PULSE_ROUTING when --routing is not
# given; docs/architecture.md section 6), the data-structure and application
# ones at a quarter of their operations: direct routing is the default
# everywhere else, so this keeps the on-path topology exercised end to end.
# Run by .ci/run after `make test`.
#
#   scripts/routing_tests.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
t0=$(date +%s)
for t in client_fault_test client_critical_path_test switch_process_test; do
  echo "routing_tests.sh: $t"
  PULSE_ROUTING=switch "$build/bin/$t" --gtest_brief=1
done
echo "routing_tests.sh: memnode_process_test (exactly-once across a restart)"
PULSE_ROUTING=switch "$build/bin/memnode_process_test" --gtest_brief=1 \
  --gtest_filter='MemNodeProcess.StoreRetransmittedAcrossACrashAndRestartIsAnsweredNotRunAgain'
# Every data-structure and application test whose requests are routed
# (issue 14): the structures, the paper's applications, and the
# applications built on pulse since (the KV store, embedding reduction,
# offloaded BFS, the Redis keyspace, the RPC baselines).  Not tx_test:
# transactions go to the chain's members directly, never by traversal
# routing, so a switch-routed run would repeat the same test.
for t in ds_test ds_lock_test ds_tree_test ds_lists_test ds_btree_repair_test ds_btree_offload_test apps_test \
  dlrm_test kv_test kv_cached_test offloaded_bfs_test resp_keyspace_test rpc_test; do
  echo "routing_tests.sh: $t"
  PULSE_ROUTING=switch PULSE_TEST_SCALE=0.25 "$build/bin/$t" --gtest_brief=1
done
echo "routing_tests.sh: took $(( $(date +%s) - t0 )) s"
