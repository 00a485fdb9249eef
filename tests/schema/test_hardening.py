"""Catalog checks that fail when the SQL loses a safety property, and pgspot over the installed SQL."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from catalog import tables as catalog_tables
from corpus import add_chunks
from plans import explain

from pgkgrag.db.connections import READER, WRITER, connect, tenant_transaction

# SECURITY DEFINER functions allowed, with their owner and why. Two are index probes: @@ and && are
# not leakproof, so under the tenant policy their GIN indexes could not be used; the probes filter
# on kgrag.current_tenant() themselves; two more read chunk_audience_idx past the audience policy
# for a caller who sees few chunks (revision 0043) and return only what it sees.
# kgrag.tenants() lists the tenants the caller may use (names
# and document counts), and kgrag_private.log_search and log_answer_at write the logs, which readers may not write
# themselves; kgrag.purge deletes them, which no tenant may do itself. The schema owner's: two read
# the API keys' hashes and the secret that seals a checked key; the curation functions write the
# decisions, which no tenant role writes itself (revision 0041), and kgrag.delete_documents ends those
# about the documents it deletes and redacts what the query log says of them (and kgrag.set_access
# of a document going into an audience); kgrag_private.groups_for reads which groups a login role
# holds and checks a key's seal (revision 0042), and llm_cache_get
# returns cached extractions by hash, which no tenant role selects whole (OWNER: the owner's role
# name, filled in by the test).
PROBE = "kgrag_probe"
LOGGER = "kgrag_logger"
OWNER = "<owner>"
DECISION = "one checked decision, with the login role and the time"
DEFINER_ALLOWED = {
    "kgrag_private.fts_probe(tsquery,regconfig,integer)": (PROBE, "full-text matches through chunk_tsv_idx"),
    "kgrag_private.fuzzy_aliases(text,double precision,double precision,integer,text[],real[])": (
        PROBE,
        "alias candidates through alias_trigrams_idx and alias_sq_idx",
    ),
    "kgrag.tenants()": (PROBE, "the tenants the caller may use and their document counts"),
    "kgrag_private.seen_audiences(text)": (PROBE, "the audiences of a tenant's chunks the caller holds a group of"),
    "kgrag_private.audience_nearest(text,vector,bit,integer,boolean)": (
        PROBE,
        "the nearest of the few chunks or entities a caller sees, through chunk_audience_idx and entity_audience_idx",
    ),
    "kgrag_private.log_search(text,text,text[],integer,integer,double precision,boolean,text,integer,"
    "text[],text,text)": (
        LOGGER,
        "one bounded log row",
    ),
    "kgrag_private.log_answer_at(text,text,text,boolean,integer,integer,integer,integer,integer,integer,"
    "double precision)": (
        LOGGER,
        "one bounded answer log row (kgrag.log_answer's)",
    ),
    "kgrag.purge()": (LOGGER, "deletes the log and failure rows past their tenant's retention"),
    "kgrag_private.log_llm_calls_at(text,jsonb)": (LOGGER, "bounded rows of the LLM calls made for the tenant"),
    "kgrag.delete_documents(text[])": (
        OWNER,
        "deletes the tenant's documents named, ending the decisions about them and redacting the query log",
    ),
    "kgrag.reject_relation(text,text,text,text)": (OWNER, DECISION),
    "kgrag.correct_relation(text,text,text,text,text)": (OWNER, DECISION),
    "kgrag.correct_evidence(text,text,text,text,text,text)": (OWNER, DECISION),
    "kgrag.rename_entity(text,text,text)": (OWNER, DECISION),
    "kgrag.merge_entities(text,text,text)": (OWNER, DECISION),
    "kgrag.split_entity(text,text,text)": (OWNER, DECISION),
    "kgrag.approve(text,text)": (OWNER, DECISION),
    "kgrag_private.check_key(text,text,name)": (OWNER, "an API key's tenant, role and this transaction's seal"),
    "kgrag_private.key_sealed(text,name)": (OWNER, "whether this transaction holds a key's seal: a boolean"),
    "kgrag_private.groups_for(text)": (OWNER, "the groups of a tenant the session's login role or key holds"),
    "kgrag.set_access(text[],text[])": (
        OWNER,
        "moves the tenant's documents the caller sees into or out of an audience, ending the decisions about them",
    ),
    "kgrag_private.llm_cache_get(text[])": (OWNER, "the cached extractions of chunk texts the caller names by hash"),
    "kgrag.submit_document(jsonb)": (OWNER, "queues one checked document for the tenant, within the owner's ceilings"),
    "kgrag_private.claim_tickets(integer)": (OWNER, "claims the tenant's queued tickets for this session"),
    "kgrag_private.settle_tickets(jsonb)": (OWNER, "settles the tickets this session claimed"),
    "kgrag.retry_documents(bigint[])": (OWNER, "queues again the tenant's failed tickets named, within the ceilings"),
}

# pgspot findings accepted, with why. pgspot assumes an attacker may write to the schemas on the
# search_path and create objects before the installer does; neither holds here:
# - PS001/PS016/PS017 (unqualified operator, function call, object reference) and PS005 (a path
#   that names a schema other than pg_catalog and pg_temp): every kgrag function pins
#   search_path = pg_catalog, <pgvector's schema>, pg_temp (pg_catalog first; the SECURITY DEFINER
#   probes pin pg_catalog, pg_temp only), and test_pinned_schemas_are_not_writable_by_others checks
#   that no role but the owner may create objects in those schemas;
# - PS002 (CREATE OR REPLACE): the functions live in schemas kgrag and kgrag_private, which the installer
#   creates and owns (CREATE SCHEMA fails if one exists), so nobody else can have put a function there;
# - PS012/PS014 (CREATE TEMP TABLE / INDEX IF NOT EXISTS): scratch tables in the caller's own
#   pg_temp schema, which only the same session can write, so only the caller could have made them.
PGSPOT_ACCEPTED = {"PS001", "PS002", "PS005", "PS012", "PS014", "PS016", "PS017"}


def test_no_security_definer_function_outside_the_allow_list(admin: psycopg.Connection) -> None:
    definers = dict(
        admin.execute(
            "SELECT p.oid::regprocedure::text, p.proowner::regrole::text FROM pg_proc p"
            " WHERE p.pronamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace) AND p.prosecdef"
        ).fetchall()
    )
    schema_owner = admin.execute("SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'kgrag'").fetchone()
    assert schema_owner is not None
    assert set(definers) == set(DEFINER_ALLOWED)
    assert definers == {f: schema_owner[0] if owner == OWNER else owner for f, (owner, _) in DEFINER_ALLOWED.items()}
    for function in definers:
        assert (
            "SECURITY DEFINER"
            in admin.execute("SELECT obj_description(%s::regprocedure, 'pg_proc')", [function]).fetchone()[0]
        )  # type: ignore[index]
        public = admin.execute("SELECT has_function_privilege('public', %s, 'EXECUTE')", [function]).fetchone()
        assert public == (False,), function


def test_the_probe_role_reads_three_tables_and_entity_ids_and_the_logger_writes_one(admin: psycopg.Connection) -> None:
    role = admin.execute(
        "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s", [PROBE]
    ).fetchone()
    assert role == (False, False, False)
    grants = admin.execute(
        "SELECT table_name, privilege_type FROM information_schema.role_table_grants WHERE grantee = %s ORDER BY 1, 2",
        [PROBE],
    ).fetchall()
    assert grants == [("alias", "SELECT"), ("chunk", "SELECT"), ("document", "SELECT")]
    policies = admin.execute(
        "SELECT tablename, cmd, qual FROM pg_policies WHERE schemaname = 'kgrag' AND %s = ANY (roles) ORDER BY 1",
        [PROBE],
    ).fetchall()
    assert policies == [
        ("alias", "SELECT", "true"),
        ("chunk", "SELECT", "true"),
        ("document", "SELECT", "true"),
        ("entity", "SELECT", "true"),
    ]
    # of an entity, its id, audience and vectors alone (revision 0044: kgrag_private.audience_nearest)
    columns = admin.execute(
        "SELECT table_name, column_name FROM information_schema.column_privileges"
        " WHERE grantee = %s AND table_name = 'entity' ORDER BY 2",
        [PROBE],
    ).fetchall()
    assert [c for _, c in columns] == ["audience", "embedding", "entity_id", "quantized", "tenant_id"]
    logger = admin.execute(
        "SELECT table_name, privilege_type FROM information_schema.role_table_grants WHERE grantee = %s ORDER BY 1, 2",
        [LOGGER],
    ).fetchall()
    # it writes the logs, and (revision 0039) reads, purges and redacts them, and reads the
    # settings (rates and retention); (revision 0041) it no longer redacts (kgrag.delete_documents
    # does, as the schema owner); (revision 0050) it purges the settled tickets of the queue,
    # reading only whether and when one was settled
    assert logger == [
        ("answer_log", "DELETE"),
        ("answer_log", "INSERT"),
        ("answer_log", "SELECT"),
        ("ingest_failure", "DELETE"),
        ("ingest_failure", "SELECT"),
        ("ingest_ticket", "DELETE"),
        ("llm_call", "DELETE"),
        ("llm_call", "INSERT"),
        ("llm_call", "SELECT"),
        ("log_overflow", "DELETE"),
        ("log_overflow", "INSERT"),
        ("log_overflow", "SELECT"),
        ("log_overflow", "UPDATE"),
        ("query_log", "DELETE"),
        ("query_log", "INSERT"),
        ("query_log", "SELECT"),
        ("settings", "SELECT"),
    ]
    ticket = admin.execute(
        "SELECT column_name FROM information_schema.column_privileges"
        " WHERE grantee = %s AND privilege_type = 'SELECT' AND table_name = 'ingest_ticket' ORDER BY 1",
        [LOGGER],
    ).fetchall()
    assert [c for (c,) in ticket] == ["finished_at", "state", "tenant_id"]
    columns = admin.execute(
        "SELECT table_name, column_name FROM information_schema.column_privileges"
        " WHERE grantee = %s AND privilege_type = 'UPDATE' AND table_name = 'query_log'",
        [LOGGER],
    ).fetchall()
    assert columns == []  # (revision 0041: kgrag.delete_documents redacts, as the schema owner)
    logger_policies = admin.execute(
        "SELECT tablename, cmd, qual FROM pg_policies WHERE schemaname = 'kgrag' AND %s = ANY (roles) ORDER BY 1, 2",
        [LOGGER],
    ).fetchall()
    assert logger_policies == [
        ("answer_log", "DELETE", "true"),
        ("answer_log", "SELECT", "true"),
        ("ingest_failure", "DELETE", "true"),
        ("ingest_failure", "SELECT", "true"),
        ("ingest_ticket", "DELETE", "true"),
        ("ingest_ticket", "SELECT", "true"),
        ("llm_call", "DELETE", "true"),
        ("llm_call", "SELECT", "true"),
        ("log_overflow", "DELETE", "true"),
        ("log_overflow", "SELECT", "true"),
        ("query_log", "DELETE", "true"),
        ("query_log", "SELECT", "true"),
        ("settings", "SELECT", "true"),
    ]
    assert admin.execute(
        "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s", [LOGGER]
    ).fetchone() == (False, False, False)
    owned = admin.execute("SELECT count(*) FROM pg_class WHERE relowner = %s::regrole", [PROBE]).fetchone()
    assert owned == (0,)
    members = admin.execute(
        "SELECT m.member::regrole::text FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member"
        " WHERE m.roleid = %s::regrole AND NOT r.rolsuper",
        [PROBE],
    ).fetchall()
    assert [r for (r,) in members if r in (READER, WRITER)] == []


def test_the_probes_fail_closed_and_keep_to_the_tenant(dsn: str, admin: psycopg.Connection) -> None:
    add_chunks(admin, "t1", {"d": "renewal"})
    admin.commit()
    with connect(dsn, role=READER) as conn:
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match=r"kgrag\.tenant is not set"):
            conn.execute("SELECT * FROM kgrag_private.fts_probe('renew', 'english', 10)").fetchall()
        conn.rollback()
        with tenant_transaction(conn, "t2"):
            assert conn.execute("SELECT * FROM kgrag_private.fts_probe('renew', 'english', 10)").fetchall() == []
        with tenant_transaction(conn, "t1"):
            found = conn.execute("SELECT * FROM kgrag_private.fts_probe('renew', 'english', 10)")
            assert [r[0] for r in found] == ["d#0"]


def test_every_function_pins_its_search_path(admin: psycopg.Connection) -> None:
    loose = admin.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p"
        " WHERE p.pronamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace)"
        " AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search\\_path=pg\\_catalog,%%')"
    ).fetchall()
    assert loose == []


def test_views_are_security_invoker(admin: psycopg.Connection) -> None:
    views = admin.execute(
        "SELECT c.relname, COALESCE(c.reloptions, '{}') FROM pg_class c"
        " WHERE c.relnamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace) AND c.relkind = 'v'"
    ).fetchall()
    assert [name for name, options in views if "security_invoker=true" not in options] == []


def test_pinned_schemas_are_not_writable_by_others(admin: psycopg.Connection) -> None:
    schemas = {
        s.split("=", 1)[1].strip()
        for (config,) in admin.execute(
            "SELECT DISTINCT unnest(proconfig) FROM pg_proc"
            " WHERE pronamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace)"
        ).fetchall()
        for s in [config]
        if s.startswith("search_path=")
    }
    names = {n.strip().strip('"') for value in schemas for n in value.split(",")} - {"pg_catalog", "pg_temp"}
    assert names, schemas
    for name in sorted(names | {"kgrag", "kgrag_private"}):
        for role in ("public", READER, WRITER):
            can = admin.execute(
                "SELECT has_schema_privilege(%s, %s, 'CREATE')",
                [role if role != "public" else "pg_database_owner", name],
            ).fetchone()
            if role == "public":
                can = admin.execute(
                    "SELECT EXISTS (SELECT 1 FROM pg_namespace n, aclexplode(n.nspacl) a"
                    " WHERE n.nspname = %s AND a.grantee = 0 AND a.privilege_type = 'CREATE')",
                    [name],
                ).fetchone()
            assert can == (False,), f"{role} may create objects in schema {name}"


def test_application_roles_cannot_bypass_row_level_security(admin: psycopg.Connection) -> None:
    for role in (READER, WRITER):
        row = admin.execute(
            "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s", [role]
        ).fetchone()
        assert row == (False, False, False), role
        owned = admin.execute(
            "SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'kgrag'::regnamespace"
            " AND pg_has_role(%s, c.relowner, 'MEMBER')",
            [role],
        ).fetchone()
        assert owned == (0,), f"{role} owns (or is a member of the owner of) kgrag tables"


# The logs are written by the SECURITY DEFINER log functions alone (revision 0039): a writer reads them.
# what no tenant role writes itself: the logs, and (revision 0041) the decisions
WRITTEN_BY_THE_DATABASE = {
    "query_log",
    "answer_log",
    "log_overflow",
    "llm_call",
    "curation",
    "curation_ended",
    "ingest_ticket",  # (revision 0048) the queue, through its functions: its ceilings hold for every client
}


# Tables no tenant role selects whole: the cached extractions (revision 0042: one may be of a
# document for an audience), read through kgrag_private.llm_cache_get by the hash of a text the
# caller holds; a writer selects the columns that name an entry, never the response.
SELECTED_THROUGH_A_FUNCTION = {"llm_cache", "ingest_ticket"}  # (the queue: the columns kgrag.ingest_queue shows)
# Tables no tenant role reads or writes at all: the ingestion queue's counts (revision 0048), kept
# and read by the queue's SECURITY DEFINER functions under the row's lock.
KEPT_BY_THE_DATABASE = {"ingest_queue_load"}


def test_every_table_is_granted_to_the_application_roles(admin: psycopg.Connection) -> None:
    for table in catalog_tables(admin):
        name = f"kgrag.{table}"
        if table in KEPT_BY_THE_DATABASE:
            for role in (READER, WRITER):
                for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE"):
                    granted = admin.execute("SELECT has_table_privilege(%s, %s, %s)", [role, name, privilege])
                    assert granted.fetchone() == (False,), (name, role, privilege)
            continue
        whole = table not in SELECTED_THROUGH_A_FUNCTION
        assert admin.execute("SELECT has_table_privilege(%s, %s, 'SELECT')", [READER, name]).fetchone() == (whole,)
        for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE"):
            granted = admin.execute("SELECT has_table_privilege(%s, %s, %s)", [WRITER, name, privilege]).fetchone()
            expected = (
                whole
                if privilege == "SELECT"
                # an extraction is cached once and never rewritten (revision 0042)
                else table not in WRITTEN_BY_THE_DATABASE and (table, privilege) != ("llm_cache", "UPDATE")
            )
            assert granted == (expected,), (name, privilege)
        may_write = admin.execute("SELECT has_table_privilege(%s, %s, 'INSERT')", [READER, name]).fetchone()
        assert may_write == (False,), f"kgrag_reader may insert into {name}"  # the log: kgrag_private.log_search


def test_policies_check_the_tenant_once_per_index_scan(dsn: str, admin: psycopg.Connection) -> None:
    """Every policy compares tenant_id with kgrag.current_tenant() itself (no subquery: Citus
    refuses them in policies), and a lookup by key uses that comparison as an index condition,
    evaluated once per scan, not once per row."""
    policies = admin.execute(
        "SELECT tablename, policyname, concat(qual, ' ', with_check) FROM pg_policies WHERE schemaname = 'kgrag'"
    ).fetchall()
    tenant_policies = [p for p in policies if "current_tenant" in p[2]]
    assert len(tenant_policies) >= 15
    assert [(t, p) for t, p, text in tenant_policies if "SELECT" in text] == []
    with tenant_transaction(admin, "t1"):
        admin.execute(
            "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash)"
            " SELECT 't' || (i % 5), 'd' || i, 'h' FROM generate_series(1, 5000) AS i"
        )
    admin.commit()
    admin.execute("ANALYZE kgrag.document")
    admin.commit()
    plan = "\n".join(explain(dsn, "t1", "SELECT * FROM kgrag.document WHERE doc_id = 'd6'"))
    cond = next((line for line in plan.splitlines() if "Index Cond" in line), "")
    assert "tenant_id = kgrag.current_tenant()" in cond, plan
    assert not any("Filter" in line and "current_tenant" in line for line in plan.splitlines()), plan


@pytest.mark.parametrize("role", [READER, WRITER])
def test_every_table_fails_closed_without_a_tenant(dsn: str, role: str) -> None:
    with connect(dsn, role=role) as conn:
        tables = catalog_tables(conn)
        conn.rollback()
        for table in tables:
            with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match=r"kgrag\.tenant is not set"):
                conn.execute(f"SELECT count(*) FROM kgrag.{table}")
            conn.rollback()
        with pytest.raises(psycopg.Error, match=r"kgrag\.tenant is not set|permission denied"):
            conn.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('x', 'd', 'h')")
        conn.rollback()


@pytest.mark.slow
def test_traversal_full_text_and_linking_use_their_indexes_under_row_level_security(
    dsn: str, admin: psycopg.Connection
) -> None:
    with tenant_transaction(admin, "t1"):
        admin.execute(
            "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash, lang)"
            " SELECT 't1', 'd' || i, 'h', 'english' FROM generate_series(1, 20000) i"
        )
        admin.execute(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text,"
            " content_hash, lang) SELECT 't1', 'd' || i || '#0', 'd' || i, 0, 0, 20,"
            " 'renewal note code' || i, 'h', 'english' FROM generate_series(1, 20000) i"
        )
        admin.execute(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type)"
            " SELECT 't1', 'n:' || i, 'n' || i, 'n' FROM generate_series(1, 20000) i"
        )
        admin.execute(
            "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight)"
            " SELECT 't1', 'n:' || i, 'n:' || ((i * 7) % 20000 + 1), 'CO_OCCURS', 1"
            " FROM generate_series(1, 20000) i WHERE i <> (i * 7) % 20000 + 1"
        )
        admin.execute(
            "INSERT INTO kgrag.alias (tenant_id, entity_id, alias)"
            " SELECT 't1', 'n:' || i, 'svc' || md5(i::text) FROM generate_series(1, 20000) i"
        )
    admin.commit()
    admin.autocommit = True  # VACUUM merges the GIN pending lists, as autovacuum would
    admin.execute("VACUUM ANALYZE kgrag.chunk, kgrag.edge, kgrag.entity, kgrag.document, kgrag.alias")
    lexical = "\n".join(explain(dsn, "t1", "SELECT * FROM kgrag.search_chunks_lexical('code17')"))
    assert "chunk_tsv_idx" in lexical, lexical
    walk = "\n".join(explain(dsn, "t1", "SELECT * FROM kgrag.k_hop(ARRAY['n:1'], 2, 4)"))
    assert re.search(r"Index (Only )?Scan using (edge_src_weight_idx|edge_pkey)", walk), walk
    assert "Seq Scan on edge" not in walk
    typo = admin.execute("SELECT 'alpha ' || substr(md5('17'), 1, 20)").fetchone()[0]  # type: ignore[index]
    linking = "\n".join(explain(dsn, "t1", "SELECT * FROM kgrag.link_entities(%s, include_isolated => true)", [typo]))
    assert "alias_trigrams_idx" in linking, linking


def test_pgspot_finds_nothing_but_the_justified(admin: psycopg.Connection, tmp_path: Path) -> None:
    """pgspot over the installed SQL (the catalog's function definitions, search_path resolved)."""
    installed = admin.execute(
        "SELECT string_agg(pg_get_functiondef(p.oid) || ';', E'\\n' ORDER BY p.oid::regprocedure::text)"
        " FROM pg_proc p WHERE p.pronamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace)"
    ).fetchone()[0]  # type: ignore[index]
    path = tmp_path / "installed.sql"
    path.write_text(installed)
    result = subprocess.run(
        [str(Path(sys.executable).parent / "pgspot"), str(path)], capture_output=True, text=True, check=False
    )
    codes = Counter(re.findall(r"^(PS\d{3}):", result.stdout, re.M))
    summary = re.search(r"Errors: (\d+) Warnings: (\d+) Unknown: (\d+)", result.stdout)
    assert summary is not None, result.stdout + result.stderr
    assert summary.group(3) == "0", result.stdout
    assert set(codes) <= PGSPOT_ACCEPTED, {code: n for code, n in codes.items() if code not in PGSPOT_ACCEPTED}
    assert sum(codes.values()) == int(summary.group(1)) + int(summary.group(2))
