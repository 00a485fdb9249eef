#!/usr/bin/env bash
# First start of the container (empty data directory): install the kgrag schema with the same
# migrations as `pgkgrag db upgrade`. The official entrypoint runs this against its temporary
# server, which listens on the unix socket only. Later upgrades: the compose `migrate` service.
# (No `exit`: the entrypoint sources scripts that lost their executable bit.)
set -euo pipefail

if [ -n "${KGRAG_SKIP_INIT:-}" ]; then
    # Citus nodes: the schema goes onto the coordinator once the workers have joined (citus/setup.sh)
    echo "pgkgrag: KGRAG_SKIP_INIT is set, the kgrag schema is not installed here"
else
    kgrag_user="${POSTGRES_USER:-postgres}"
    kgrag_database="${POSTGRES_DB:-$kgrag_user}"
    echo "pgkgrag: installing the kgrag schema into ${kgrag_database} (embedding dimension ${KGRAG_DIM:-512})"
    KGRAG_DSN="postgresql://${kgrag_user}@/${kgrag_database}?host=${KGRAG_SOCKET_DIR:-/var/run/postgresql}" \
        "${KGRAG_BIN:-/opt/pgkgrag/bin/pgkgrag}" db upgrade --dim "${KGRAG_DIM:-512}"
fi
