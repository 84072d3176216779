#!/bin/sh
# First start: a cluster whose superuser is POSTGRES_USER with the password of POSTGRES_PASSWORD_FILE, reached over
# TCP with scram-sha-256, and the database POSTGRES_DB. Then PostgreSQL on every address, as the official image.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  initdb --username="$POSTGRES_USER" --pwfile="$POSTGRES_PASSWORD_FILE" --auth-local=trust \
    --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
