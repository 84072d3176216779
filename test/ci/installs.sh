#!/usr/bin/env bash
# rmbg as people install it, with the npm and Node on PATH (test/ci/node-lines.sh runs it under Node 24 and npm 12,
# which runs no dependency's install script unless allowed): the packed tarball installed with no flags into a new
# project (removeBackground()), globally (rmbg remove, rmbg serve answering a cutout) and through npx. Each first run
# makes the model from the data package into a fresh cache; the store is node:sqlite (better-sqlite3 stays unbuilt).
# Usage: test/ci/installs.sh WORK   (run in a checkout whose dist/ is built; WORK: an empty folder)
set -euo pipefail
work=$1
repo="$(cd "$(dirname "$0")/../.." && pwd)"
sample="$repo/samples/chelsea.png"
tarball="$work/$(cd "$repo" && npm pack --ignore-scripts --silent --pack-destination "$work")"
export XDG_CACHE_HOME="$work/cache" RMBG_DATA_DIR="$work/data"
# npm as a user has it: not the strict mode the clone's CI install runs in.
unset npm_config_strict_allow_scripts

echo "== npm install $(basename "$tarball") into a new project: removeBackground()"
mkdir "$work/project" && cd "$work/project"
npm init -y >/dev/null
npm install --no-audit --no-fund "$tarball"
node --input-type=module -e "
  import { removeBackground, close } from 'rmbg';
  const cutout = await removeBackground('$sample');
  await close();
  if (cutout.format !== 'png' || cutout.width !== 451 || cutout.height !== 300) throw new Error(JSON.stringify(cutout));
  console.log('removeBackground():', cutout.format, cutout.width, cutout.height);
"

echo "== npm install -g: rmbg remove, rmbg serve"
npm install -g --no-audit --no-fund --prefix "$work/global" "$tarball"
rmbg="$work/global/bin/rmbg"
"$rmbg" remove "$sample" -o "$work/out-global"
test -s "$work/out-global/chelsea.png"
key="$("$rmbg" keys create --credits 1 --json | node -p 'JSON.parse(require("fs").readFileSync(0)).key')"
"$rmbg" serve --port 0 --no-ui >"$work/serve.log" 2>&1 &
serve=$!
trap 'kill "$serve" 2>/dev/null || true' EXIT
until url="$(grep -o 'listening on http://[0-9.:]*' "$work/serve.log" | cut -d' ' -f3)" && [ -n "$url" ]; do
  kill -0 "$serve" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.5
done
node "$repo/test/container/serve-checks.mjs" cutout "$url" "$key"
kill -TERM "$serve" && wait "$serve"

echo "== npx: rmbg remove"
cd "$work"
npx --yes --package "$tarball" rmbg remove "$sample" -o "$work/out-npx"
test -s "$work/out-npx/chelsea.png"
echo "installs: all three work"
