#!/bin/sh
# Start the Debian PostgreSQL cluster (listens on localhost by default) (idempotent) and create role/database
# fireval/fireval. Prints the URL to export as FIREVAL_PG_URL. Needs root (or the postgres user).
set -eu
VER="${PG_VERSION:-$(ls /usr/lib/postgresql | sort -n | tail -1)}"
PORT="${PG_PORT:-5432}"
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -q "^$VER main$"; then
  pg_createcluster "$VER" main -p "$PORT" >/dev/null
fi
if ! pg_lsclusters -h | awk -v v="$VER" '$1==v && $2=="main" {print $4}' | grep -q online; then
  pg_ctlcluster "$VER" main start
fi
for i in $(seq 1 30); do
  su postgres -c "pg_isready -q -h 127.0.0.1 -p $PORT" && break
  sleep 1
done
su postgres -c "psql -q -p $PORT -tAc \"SELECT 1 FROM pg_roles WHERE rolname='fireval'\"" | grep -q 1 ||
  su postgres -c "psql -q -p $PORT -c \"CREATE ROLE fireval LOGIN PASSWORD 'fireval'\""
su postgres -c "psql -q -p $PORT -tAc \"SELECT 1 FROM pg_database WHERE datname='fireval'\"" | grep -q 1 ||
  su postgres -c "psql -q -p $PORT -c \"CREATE DATABASE fireval OWNER fireval\""
echo "postgresql+psycopg2://fireval:fireval@127.0.0.1:$PORT/fireval"
