#!/usr/bin/env bash
# The Node lines people run, beside this machine's own Node 20 and npm 11 (which .ci/run tests first):
# - the unit project under Node 22, 24 and 26, in this checkout (sharp and onnxruntime are N-API, so one install
#   serves every Node; the store uses node:sqlite there);
# - a fresh clone as a new user has it, Node 24 with npm 12: `npm ci` with strict allowScripts (a dependency's
#   install script nobody reviewed fails it), then the README's quick start as written: the cutouts, the whole suite;
#   then its packed tarball installed as people do, with no flags (test/ci/installs.sh).
# Node and npm come from the npm registry (test/ci/toolchain.sh); node-gyp gets that Node's headers.
set -euo pipefail
cd "$(dirname "$0")/../.."
unit_lines=(22.23.5 24.22.3 26.12.1)
user_node=24.22.3
user_npm=12.2.2

for version in "${unit_lines[@]}"; do
  node_dir="$(bash test/ci/toolchain.sh node "$version")"
  echo "== the unit project under Node $version"
  PATH="$node_dir/bin:$PATH" "$node_dir/bin/node" node_modules/vitest/vitest.mjs run --project unit
done

node_dir="$(bash test/ci/toolchain.sh node "$user_node")"
npm_dir="$(bash test/ci/toolchain.sh npm "$user_npm")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # the test PostgreSQL runs as its own user when the suite runs as root: it reads its binaries here
mkdir "$work/bin"
ln -s "$node_dir/bin/node" "$work/bin/node"
for tool in npm npx; do
  printf '#!/bin/sh\nexec "%s" "%s/bin/%s-cli.js" "$@"\n' "$node_dir/bin/node" "$npm_dir" "$tool" >"$work/bin/$tool"
  chmod +x "$work/bin/$tool"
done
git clone --quiet "$PWD" "$work/rmbg"
cd "$work/rmbg"
# node-gyp's own way to take an option (npm 12 warns of npm_config_ keys it does not know, such as nodedir).
export npm_package_config_node_gyp_nodedir="$node_dir"
export PATH="$work/bin:$PATH" npm_config_strict_allow_scripts=true
unset ONNXRUNTIME_NODE_INSTALL # npm 12 skips onnxruntime-node's download by package.json's allowScripts alone
echo "== a fresh clone under Node $(node --version), npm $(npm --version): the README's quick start"
# The two commands of the README's "## Quick start" block, as written.
quick_start="$(awk '/^## Quick start/ { found = 1 } found && /^```sh/ { inside = 1; next } inside && /^```/ { exit } inside' README.md)"
[ "$(printf '%s\n' "$quick_start" | wc -l)" -eq 2 ] || { echo "README's quick start is not two commands" >&2; exit 1; }
bash -euo pipefail -c "$quick_start"
cutouts=(out/samples/*.png)
[ "${#cutouts[@]}" -eq 4 ] || { echo "the quick start wrote ${#cutouts[@]} cutouts, not 4" >&2; exit 1; }
echo "== the packed tarball installed as people do, under Node $(node --version), npm $(npm --version)"
mkdir "$work/installs"
bash test/ci/installs.sh "$work/installs"
