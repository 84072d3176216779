#!/bin/sh
# The official image's entry point: `haproxy …` (or bare options) runs in the foreground as master and worker.
set -e
if [ "${1#-}" != "$1" ]; then
  set -- haproxy "$@"
fi
if [ "$1" = haproxy ]; then
  shift
  set -- haproxy -W -db "$@"
fi
exec "$@"
