#!/bin/sh
# Run once by the postgres image, on a new data volume (/docker-entrypoint-initdb.d): rmbg's role and database.
# rmbg logs in as `rmbg`, which owns its database (its migrations create tables there) and is no superuser: a
# server's credentials reach rmbg's ledger, not the cluster's other databases, roles or files. The superuser
# (`postgres`, password in the secret db_admin_password) is for you.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres --no-psqlrc \
  -v password="$(cat /run/secrets/db_password)" <<'SQL'
CREATE ROLE rmbg LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'password';
CREATE DATABASE rmbg OWNER rmbg;
REVOKE ALL ON DATABASE rmbg FROM PUBLIC;
SQL
