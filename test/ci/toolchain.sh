#!/usr/bin/env bash
# Fetches a Node or an npm from the npm registry once (the node-linux-* package carries the official build, with its
# headers for node-gyp in include/) into node_modules/.cache/rmbg-toolchain, and prints its folder:
#   test/ci/toolchain.sh node 24.22.3   → FOLDER with bin/node and include/node (npm_config_nodedir=FOLDER)
#   test/ci/toolchain.sh npm 12.2.2     → FOLDER with bin/npm-cli.js and bin/npx-cli.js
set -euo pipefail
kind=$1 version=$2
cd "$(dirname "$0")/../.."
case "$kind" in
  node) spec="node-linux-$(node -p process.arch)@$version" ;;
  npm) spec="npm@$version" ;;
  *) echo "usage: $0 node|npm VERSION" >&2; exit 2 ;;
esac
dir="$PWD/node_modules/.cache/rmbg-toolchain/${spec/\//+}"
if [ ! -e "$dir/package/package.json" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "$spec" >/dev/null && tar xzf ./*.tgz && rm ./*.tgz)
fi
echo "$dir/package"
