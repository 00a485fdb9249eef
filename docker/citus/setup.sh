#!/usr/bin/env bash
# One-shot Citus setup, run from the `setup` service of compose.citus.yml, and by tests/citus/test_citus.py
# against the cluster of ../shared/citus/citus.sh (the same steps: what the tests check is what the
# compose does): join the workers to the coordinator, install the kgrag schema on the coordinator
# (the same migrations as anywhere else; Citus propagates the extension, roles and DDL to the
# workers), then distribute the tables by tenant. Every step is idempotent: running it again
# changes nothing.
#
# Environment: the libpq variables (PGHOST, PGUSER, PGDATABASE, ...) and KGRAG_DSN name the
# coordinator; KGRAG_COORDINATOR is the coordinator as the workers reach it, KGRAG_WORKERS the
# workers, each host or host:port (port 5432 when left out); KGRAG_DIM the embedding dimension.
set -euo pipefail

node() {  # host[:port] -> "'host', port" for citus_add_node and citus_set_coordinator_host
  local host=${1%%:*} port=5432
  [[ $1 == *:* ]] && port=${1##*:}
  echo "'${host}', ${port}"
}

psql -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS citus"
psql -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS vector"
psql -v ON_ERROR_STOP=1 -c "SELECT citus_set_coordinator_host($(node "${KGRAG_COORDINATOR:-coordinator}"))"
for worker in ${KGRAG_WORKERS}; do
    psql -v ON_ERROR_STOP=1 -c "SELECT citus_add_node($(node "${worker}"))"
done
pgkgrag db upgrade --dim "${KGRAG_DIM:-512}"
psql -v ON_ERROR_STOP=1 -c "SELECT * FROM kgrag.distribute()"
psql -v ON_ERROR_STOP=1 -c "SELECT table_name, citus_table_type, distribution_column, colocation_id FROM citus_tables ORDER BY 1"
