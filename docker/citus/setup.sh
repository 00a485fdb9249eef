#!/usr/bin/env bash
# One-shot Citus setup, run from the `setup` service of compose.citus.yml: join the workers to
# the coordinator, install the kgrag schema on the coordinator (the same migrations as anywhere
# else; Citus propagates the extension, roles and DDL to the workers), then distribute the tables
# by tenant. Every step is idempotent: running it again changes nothing.
set -euo pipefail

psql -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS citus"
psql -v ON_ERROR_STOP=1 -c "SELECT citus_set_coordinator_host('coordinator', 5432)"
for worker in ${KGRAG_WORKERS}; do
    psql -v ON_ERROR_STOP=1 -c "SELECT citus_add_node('${worker}', 5432)"
done
pgkgrag db upgrade --dim "${KGRAG_DIM:-512}"
psql -v ON_ERROR_STOP=1 -c "SELECT * FROM kgrag.distribute()"
psql -v ON_ERROR_STOP=1 -c "SELECT table_name, citus_table_type, distribution_column, colocation_id FROM citus_tables ORDER BY 1"
