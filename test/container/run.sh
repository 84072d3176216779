#!/usr/bin/env bash
# The container image, built and run for real (issue #30): the Dockerfile built with podman on a local stand-in
# for node:24-bookworm-slim (base-image.sh: no image registry is reachable here), then what a deployment relies
# on: the server runs as non-root and is healthy, a key created in the container cuts a sample out through the
# API, SIGTERM while an image is in flight answers it and exits 0, a new container on the same data volume
# still knows the key and its balance, and a second one beside it refuses to start. Skipped, with a line saying why, where containers cannot run.
# Then compose.yaml, run by compose.sh.
# Usage: test/container/run.sh   (root; installs podman, runc, debootstrap and podman-compose when missing)
set -euo pipefail
cd "$(dirname "$0")/../.."

skip() {
  echo "container test SKIPPED: $*"
  exit 0
}

needed=(podman runc debootstrap podman-compose)
for tool in "${needed[@]}"; do
  command -v "$tool" >/dev/null && continue
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
    skip "$tool is missing and cannot be installed here (needs root and apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${needed[@]}" >/dev/null
  break
done
[ "$(id -u)" = 0 ] || skip "debootstrap and rootful podman need root"
# runc, not crun (which fails on this kernel's hybrid cgroups); ulimits no higher than the host's.
podman() { command podman --runtime runc "$@"; }
export -f podman
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
probe_log="$(mktemp)"
# Whether a container can start at all, before minutes of debootstrap: an image of /bin/true and its libraries.
probe="$(mktemp -d)"
for file in /bin/true $(ldd /bin/true | grep -o '/[^ ]*'); do
  mkdir -p "$probe$(dirname "$file")" && cp -L "$file" "$probe$file"
done
tar -C "$probe" -c . | podman import --quiet - localhost/rmbg-container-probe >/dev/null
rm -rf "$probe"
podman run --rm "${limits[@]}" localhost/rmbg-container-probe /bin/true 2>"$probe_log" ||
  skip "podman cannot start a container here: $(tail -1 "$probe_log")"
podman rmi localhost/rmbg-container-probe >/dev/null

base="$(test/container/base-image.sh)"
image=localhost/rmbg:container-test
started=$SECONDS
podman build --quiet --format docker "${limits[@]}" --build-arg "NODE_IMAGE=$base" -t "$image" . >/dev/null
echo "image built from the Dockerfile on $base in $((SECONDS - started)) s:" \
  "$(podman image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }')"

run_id="rmbg-container-test-$$"
volume="$run_id-data"
token="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
cleanup() {
  rm -f "$probe_log"
  podman rm --force --ignore "$run_id-1" "$run_id-2" "$run_id-3" >/dev/null 2>&1 || true
  podman volume rm --force "$volume" >/dev/null 2>&1 || true
}
trap cleanup EXIT
podman volume create "$volume" >/dev/null

# Starts the image as users do (its own CMD), on the data volume; prints the host URL once /readyz answers 200.
start() {
  local name="$1"
  # (Without systemd, podman says on stderr that it cannot schedule the HEALTHCHECK: run below by hand.)
  podman run --detach "${limits[@]}" --name "$name" -p 127.0.0.1::5000 -v "$volume:/data" \
    -e RMBG_METRICS_TOKEN="$token" "$image" >/dev/null 2>"$probe_log" || { cat "$probe_log" >&2; return 1; }
  local url="http://$(podman port "$name" 5000/tcp)"
  node test/container/serve-checks.mjs ready "$url" "$name" >&2
  echo "$url"
}

url="$(start "$run_id-1")"
uid="$(podman exec "$run_id-1" awk '/^Uid:/ { print $2 }' /proc/1/status)"
[ "$uid" != 0 ] || { echo "container check FAILED: rmbg serve runs as root" >&2; exit 1; }
echo "non-root: rmbg serve runs as uid $uid"
podman healthcheck run "$run_id-1" >/dev/null || { echo "container check FAILED: HEALTHCHECK failed" >&2; exit 1; }
echo "healthcheck: healthy"
key="$(podman exec "$run_id-1" rmbg keys create --credits 3 --json | node -p 'JSON.parse(require("fs").readFileSync(0)).key')"
node test/container/serve-checks.mjs cutout "$url" "$key"
node test/container/serve-checks.mjs drain "$url" "$key" "$run_id-1" "$token"

# A new container on the same volume, as after an upgrade: the key works and its two images were charged.
url="$(start "$run_id-2")"
node test/container/serve-checks.mjs balance "$url" "$key" 1

# A second container on the volume while one serves (both are pid 1): it refuses to start, naming the other.
twin_exit=0
twin_log="$(timeout 120 podman run --rm "${limits[@]}" --name "$run_id-3" -v "$volume:/data" "$image" 2>&1)" ||
  twin_exit=$?
if [ "$twin_exit" = 0 ] || [ "$twin_exit" = 124 ] || ! grep -q 'another rmbg serve (pid 1 in ' <<<"$twin_log"; then
  echo "container check FAILED: a second container on the SQLite volume (exit $twin_exit): $twin_log" >&2
  exit 1
fi
echo "second container on the volume: refused, exit $twin_exit: $(grep -o 'another rmbg serve.*' <<<"$twin_log" | head -c 160)"
podman rm --force "$run_id-1" "$run_id-2" >/dev/null 2>&1

# compose.yaml: PostgreSQL, the first-key step, three servers behind the balancer's one URL, the checks of issue #39.
test/container/compose.sh "$image" "$base"
echo "container test passed"
