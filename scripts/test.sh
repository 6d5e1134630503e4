#!/usr/bin/env bash
# Run every check CI runs: lint, format, types, and the whole test suite (browser and PostgreSQL included).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${FIREVAL_PG_URL:-}" ] && [ -x scripts/start_postgres.sh ]; then
  FIREVAL_PG_URL="$(bash scripts/start_postgres.sh | tail -n 1)"
  export FIREVAL_PG_URL
fi

.venv/bin/ruff check src tests benchmarks scripts
.venv/bin/ruff format --check src tests benchmarks scripts
.venv/bin/mypy
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
