#!/usr/bin/env bash
# compose.yaml run for real with podman-compose (after run.sh built the image): PostgreSQL, the first-key step, three
# servers and the balancer in front of them, one URL. The first key is in a 0600 file in the volume and not in the
# log; only the balancer is published, on 127.0.0.1; every container but PostgreSQL is read-only and without
# capabilities. Then balancer-checks.mjs: 60 images through the one URL while one server is SIGKILLed and another
# SIGTERMed (none lost, the ledger equals the answers), and each client's own address reaching the auth throttle.
# podman-compose 1.0.3 (Debian bookworm) starts services without waiting for depends_on's conditions, ignores
# --scale, networks' ipam and a service's fixed address (and fails on the mapping form that carries it), so this
# script starts the services in compose.yaml's order and waits for each condition itself, takes the replica count
# from compose.local.yaml, and makes the network and the balancer's address as compose.yaml declares them.
# Usage: test/container/compose.sh IMAGE BASE   (IMAGE: the rmbg image; BASE: a Debian image with apt)
set -euo pipefail
cd "$(dirname "$0")/../.."
image="$1"
base="$2"
podman() { command podman --runtime runc "$@"; }
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

podman build --quiet "${limits[@]}" --build-arg "BASE=$base" -t localhost/rmbg-postgres-standin:15 \
  test/container/postgres >/dev/null
podman build --quiet "${limits[@]}" --build-arg "BASE=$base" -t localhost/rmbg-haproxy-standin:2.6 \
  test/container/haproxy >/dev/null
podman tag "$image" localhost/rmbg:latest # compose.yaml's image: rmbg:latest

project="rmbg-compose-test-$$"
work="$(mktemp -d)"
mkdir "$work/deploy"
cp test/container/compose.local.yaml "$work/"
cp deploy/haproxy.cfg "$work/deploy/"
cp -p -r deploy/postgres "$work/deploy/"
# The copy without the balancer's `networks:` mapping, which podman-compose 1.0.3 cannot read (its address is
# given below with --ip); Debian's python3-yaml comes with podman-compose.
/usr/bin/python3 -c '
import sys, yaml
compose = yaml.safe_load(open("compose.yaml"))
del compose["services"]["balancer"]["networks"]
yaml.safe_dump(compose, open(sys.argv[1], "w"), sort_keys=False)
' "$work/compose.yaml"
openssl rand -hex 24 >"$work/db-password.txt"
openssl rand -hex 24 >"$work/db-admin-password.txt"
export RMBG_TEST_METRICS_TOKEN="$(openssl rand -hex 16)"
# A free port for the one URL (5000, compose.yaml's default, may be taken on a shared machine).
export RMBG_PORT="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
# compose.yaml's network: its default /24, the balancer at .10, the others from .128.
prefix="$(sed -n 's/.*ipv4_address: \${RMBG_SUBNET_PREFIX:-\([0-9.]*\)}\.10$/\1/p' compose.yaml)"
[ -n "$prefix" ] || { echo "compose check FAILED: no balancer address in compose.yaml" >&2; exit 1; }
export RMBG_SUBNET_PREFIX="$prefix"
# compose EXTRA ARGS…: podman-compose with EXTRA added to each `podman run` (podman-compose has no per-service way).
compose() {
  local extra="$1"
  shift
  podman-compose --podman-run-args "--runtime runc ${limits[*]} $extra" -p "$project" \
    -f "$work/compose.yaml" -f "$work/compose.local.yaml" "$@" >/dev/null 2>"$work/compose.log" ||
    { cat "$work/compose.log" >&2; return 1; }
}
cleanup() {
  compose "" down --volumes || true
  podman volume rm --force "${project}_db-data" "${project}_rmbg-data" >/dev/null 2>&1 || true
  podman network rm --force "${project}_default" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
podman network create --subnet "$prefix.0/24" --ip-range "$prefix.128/25" "${project}_default" >/dev/null

# db, until its health check (pg_isready) passes.
compose "" up -d --no-build db
until podman healthcheck run "${project}_db_1" >/dev/null 2>&1; do
  [ "$(podman inspect --format '{{.State.Running}}' "${project}_db_1")" = true ] ||
    { podman logs "${project}_db_1" >&2; exit 1; }
  sleep 1
done
echo "compose: PostgreSQL healthy"

# first-key, until it exits 0: it writes the key to a file in the volume.
compose "" up -d --no-build --no-deps first-key
[ "$(podman wait "${project}_first-key_1")" = 0 ] || { podman logs "${project}_first-key_1" >&2; exit 1; }

compose "" up -d --no-build --no-deps rmbg
compose "--ip $prefix.10" up -d --no-build --no-deps balancer
servers=("${project}_rmbg_1" "${project}_rmbg_2" "${project}_rmbg_3")
# The compose file's health check: /readyz answers 200 (the model loaded, the database at this schema). Three
# servers loading the model at once on a small machine may miss the database's connect timeout and exit: their
# restart policy starts them again, as it would for users.
started=$SECONDS
for server in "${servers[@]}"; do
  until podman healthcheck run "$server" >/dev/null 2>&1; do
    ((SECONDS - started < 300)) || { podman logs "$server" >&2; echo "compose check FAILED: $server not healthy" >&2; exit 1; }
    sleep 1
  done
done
echo "compose: 3 servers healthy in $((SECONDS - started)) s (restarts: $(podman inspect --format '{{.RestartCount}}' "${servers[@]}" | awk '{ n += $1 } END { print n }'))"
url="http://127.0.0.1:$RMBG_PORT"
key="$(podman exec "${servers[0]}" cat /data/first-api-key.txt | grep '^rmbg_')" || {
  echo "compose check FAILED: no key in /data/first-api-key.txt; first-key said:" >&2
  podman logs "${project}_first-key_1" >&2
  exit 1
}
mode="$(podman exec "${servers[0]}" stat -c %a /data/first-api-key.txt)"
[ "$mode" = 600 ] || { echo "compose check FAILED: /data/first-api-key.txt has mode $mode" >&2; exit 1; }
if podman logs "${project}_first-key_1" 2>&1 | grep -qF "$key"; then
  echo "compose check FAILED: the first key is in first-key's log" >&2
  exit 1
fi
echo "compose: first-key created a key with 100 credits, in a 0600 file and not in its log"
for name in "${servers[@]}" "${project}_balancer_1"; do
  published="$(podman port "$name")"
  locked="$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}}' "$name")"
  expected=""
  [ "$name" = "${project}_balancer_1" ] && expected="5000/tcp -> 127.0.0.1:$RMBG_PORT"
  if [ "$published" != "$expected" ] || [[ "$locked" != "true "*ALL* && "$locked" != "true "*CAP_* ]]; then
    echo "compose check FAILED: $name published on '$published', read-only and capabilities dropped: $locked" >&2
    exit 1
  fi
done
echo "compose: one port, the balancer's, on 127.0.0.1 only; servers unpublished; all read-only, no capabilities"
node test/container/balancer-checks.mjs routed "$url" "$project"
node test/container/serve-checks.mjs cutout "$url" "$key"
node test/container/serve-checks.mjs balance "$url" "$key" 99

# first-key again, as at the next `up`: it finds the key and creates none.
compose "" up -d --no-build --no-deps --force-recreate first-key
[ "$(podman wait "${project}_first-key_1")" = 0 ] || { podman logs "${project}_first-key_1" >&2; exit 1; }
if podman logs "${project}_first-key_1" 2>/dev/null | grep -q '^rmbg_'; then
  echo "compose check FAILED: first-key created a second key" >&2
  exit 1
fi
echo "compose: first-key at the next up created no key"

# Another key, as docs/deploy.md says: `run` on the servers' service, whose entry point reads the password.
podman-compose --podman-run-args "--runtime runc ${limits[*]}" -p "$project" -f "$work/compose.yaml" \
  -f "$work/compose.local.yaml" run --rm --no-deps rmbg keys create --credits 100 --json \
  >"$work/second-key.json" 2>"$work/compose.log" || { cat "$work/compose.log" >&2; exit 1; }
second="$(grep '^{' "$work/second-key.json")"
node test/container/serve-checks.mjs balance "$url" "$(node -p 'JSON.parse(process.argv[1]).key' "$second")" 100

node test/container/balancer-checks.mjs spread "$url" "$second" "$project" "$work"
node test/container/balancer-checks.mjs throttle "$url" "$key" "$project" localhost/rmbg:latest
echo "compose test passed: one URL in front of three servers on one PostgreSQL"
