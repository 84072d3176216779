#!/usr/bin/env bash
# compose.yaml run for real with podman-compose (after run.sh built the image): PostgreSQL, the first-key step and
# the two servers; each server cuts out a sample for the first key, and both read the same balance. The first key is
# in a 0600 file in the volume and not in the log; the servers are published on 127.0.0.1 only, read-only and
# without capabilities.
# podman-compose 1.0.3 (Debian bookworm) starts services without waiting for depends_on's conditions, so this
# script starts them in compose.yaml's order and waits for each condition itself.
# Usage: test/container/compose.sh IMAGE BASE   (IMAGE: the rmbg image; BASE: a Debian image with apt)
set -euo pipefail
cd "$(dirname "$0")/../.."
image="$1"
base="$2"
podman() { command podman --runtime runc "$@"; }
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

podman build --quiet "${limits[@]}" --build-arg "BASE=$base" -t localhost/rmbg-postgres-standin:15 \
  test/container/postgres >/dev/null
podman tag "$image" localhost/rmbg:latest # compose.yaml's image: rmbg:latest

project="rmbg-compose-test-$$"
work="$(mktemp -d)"
cp compose.yaml test/container/compose.local.yaml "$work/"
openssl rand -hex 24 >"$work/db-password.txt"
compose() {
  podman-compose --podman-run-args "--runtime runc ${limits[*]}" -p "$project" \
    -f "$work/compose.yaml" -f "$work/compose.local.yaml" "$@" >/dev/null 2>"$work/compose.log" ||
    { cat "$work/compose.log" >&2; return 1; }
}
cleanup() {
  compose down --volumes || true
  podman volume rm --force "${project}_db-data" "${project}_rmbg-data" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# db, until its health check (pg_isready) passes.
compose up -d --no-build db
until podman healthcheck run "${project}_db_1" >/dev/null 2>&1; do
  [ "$(podman inspect --format '{{.State.Running}}' "${project}_db_1")" = true ] ||
    { podman logs "${project}_db_1" >&2; exit 1; }
  sleep 1
done
echo "compose: PostgreSQL healthy"

# first-key, until it exits 0: it writes the key to a file in the volume.
compose up -d --no-build --no-deps first-key
[ "$(podman wait "${project}_first-key_1")" = 0 ] || { podman logs "${project}_first-key_1" >&2; exit 1; }

compose up -d --no-build --no-deps rmbg-1 rmbg-2
for server in rmbg-1:5001 rmbg-2:5002; do
  node test/container/serve-checks.mjs ready "http://127.0.0.1:${server#*:}" "${project}_${server%:*}_1"
done
key="$(podman exec "${project}_rmbg-1_1" cat /data/first-api-key.txt | grep '^rmbg_')" || {
  echo "compose check FAILED: no key in /data/first-api-key.txt; first-key said:" >&2
  podman logs "${project}_first-key_1" >&2
  exit 1
}
mode="$(podman exec "${project}_rmbg-1_1" stat -c %a /data/first-api-key.txt)"
[ "$mode" = 600 ] || { echo "compose check FAILED: /data/first-api-key.txt has mode $mode" >&2; exit 1; }
if podman logs "${project}_first-key_1" 2>&1 | grep -qF "$key"; then
  echo "compose check FAILED: the first key is in first-key's log" >&2
  exit 1
fi
echo "compose: first-key created a key with 100 credits, in a 0600 file and not in its log"
for server in rmbg-1:5001 rmbg-2:5002; do
  name="${project}_${server%:*}_1"
  published="$(podman port "$name" 5000/tcp)"
  locked="$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}}' "$name")"
  if [ "$published" != "127.0.0.1:${server#*:}" ] || [[ "$locked" != "true "*ALL* && "$locked" != "true "*CAP_* ]] ||
    podman exec "$name" touch /app/written 2>/dev/null; then
    echo "compose check FAILED: $name published on $published, read-only and capabilities dropped: $locked" >&2
    exit 1
  fi
done
echo "compose: both servers on 127.0.0.1 only, with a read-only root file system and no capabilities"
for port in 5001 5002; do node test/container/serve-checks.mjs cutout "http://127.0.0.1:$port" "$key"; done
for port in 5001 5002; do node test/container/serve-checks.mjs balance "http://127.0.0.1:$port" "$key" 98; done

# first-key again, as at the next `up`: it finds the key and creates none.
compose up -d --no-build --no-deps --force-recreate first-key
[ "$(podman wait "${project}_first-key_1")" = 0 ] || { podman logs "${project}_first-key_1" >&2; exit 1; }
if podman logs "${project}_first-key_1" 2>/dev/null | grep -q '^rmbg_'; then
  echo "compose check FAILED: first-key created a second key" >&2
  exit 1
fi
echo "compose: first-key at the next up created no key"

# Another key, as docs/deploy.md says: `run` on a server's service, whose entry point reads the password.
second="$(podman-compose --podman-run-args "--runtime runc ${limits[*]}" -p "$project" -f "$work/compose.yaml" \
  -f "$work/compose.local.yaml" run --rm --no-deps rmbg-1 keys create --credits 5 2>"$work/compose.log" |
  grep '^rmbg_')" || { cat "$work/compose.log" >&2; exit 1; }
node test/container/serve-checks.mjs balance http://127.0.0.1:5002 "$second" 5
echo "compose test passed: two servers on one PostgreSQL, one key's balance"
