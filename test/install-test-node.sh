#!/usr/bin/env bash
# Prints the path of a Node 24 binary for the tests that run rmbg as users of a maintained Node do
# (RMBG_TEST_NODE: test/e2e/memory-soak.test.ts, malloc-thresholds.test.ts), fetched once from the npm registry by
# test/ci/toolchain.sh. Node 20, these machines' own, cannot restart itself with fixed malloc thresholds
# (process.execve), so there those tests would skip.
#   export RMBG_TEST_NODE="$(bash test/install-test-node.sh)"
set -euo pipefail
echo "$(bash "$(dirname "$0")/ci/toolchain.sh" node 24.22.3)/bin/node"
