#!/usr/bin/env bash
# The Debian tools the test suite drives, installed with apt-get only when missing (run as root, or with sudo):
# openssl (a throwaway test CA for the image_url tests), script from bsdutils (a pseudo-terminal for the
# progress-bar tests), tar (model assembly), chromium (the web page's browser tests drive Debian's chromium
# with playwright-core; a browser download cannot work offline), useradd from passwd (embedded-postgres
# creates its `postgres` user with it when the tests run as root). Used by .ci/run and the README's quick start.
set -euo pipefail
missing=""
command -v openssl >/dev/null || missing="$missing openssl"
command -v script >/dev/null || missing="$missing bsdutils"
command -v tar >/dev/null || missing="$missing tar"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v useradd >/dev/null || missing="$missing passwd"
if [ -n "$missing" ]; then
  echo "installing the Debian packages the tests need:$missing"
  apt-get update -qq && apt-get install -y -qq $missing
fi
