#!/usr/bin/env bash
# Prints the path of a Node 24 binary for the tests that run rmbg as users of a maintained Node do
# (RMBG_TEST_NODE: test/e2e/memory-soak.test.ts, malloc-thresholds.test.ts); fetched once from the npm registry
# (the node-linux-* package) into node_modules/.cache. Node 20, these machines' own, cannot restart itself with
# fixed malloc thresholds (process.execve), so there those tests would skip.
#   export RMBG_TEST_NODE="$(bash test/install-test-node.sh)"
set -euo pipefail
version=24.22.3
cd "$(dirname "$0")/.."
dir="node_modules/.cache/rmbg-test-node/$version"
if [ ! -x "$dir/package/bin/node" ]; then
  arch=$(node -p process.arch)
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "node-linux-$arch@$version" >/dev/null && tar xzf node-linux-*.tgz && rm node-linux-*.tgz)
fi
echo "$PWD/$dir/package/bin/node"
