#!/bin/sh
# First start: a cluster whose superuser is POSTGRES_USER (default postgres) with the password of
# POSTGRES_PASSWORD_FILE, reached over TCP with scram-sha-256, the database POSTGRES_DB where one is named, then the
# scripts of /docker-entrypoint-initdb.d, on a server listening on its socket only. Then PostgreSQL on every
# address, as the official image.
set -eu
export POSTGRES_USER="${POSTGRES_USER:-postgres}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  initdb --username="$POSTGRES_USER" --pwfile="$POSTGRES_PASSWORD_FILE" --auth-local=trust \
    --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ -n "${POSTGRES_DB:-}" ] && [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
  fi
  for script in /docker-entrypoint-initdb.d/*.sh; do
    [ -e "$script" ] || continue
    if [ -x "$script" ]; then "$script"; else . "$script"; fi
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
