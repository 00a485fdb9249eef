"""Two tenants, random corpora: every public function and every route, called as each tenant,
never returns a row, id, count or evidence ref of the other (hypothesis, derandomized).

For each example one tenant ingests and builds alone and its answers are recorded; then the other
tenant ingests and builds, and the first tenant's answers must be exactly the same (a count, a
rank or a score that the other tenant's rows moved would show here). Every answer of each tenant
is also scanned for the other's document ids and names. Finally the second tenant aims every
writing function at the first tenant's ids, and the first tenant's tables must not change.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ingesting import checksums, ingest
from tenant_calls import EMBEDDER, KEYED, OWNER_ONLY, PURE, ROUTES, _graph_ids, answers, reads, writes

from pgkgrag.db.connections import READER, WRITER, connect, tenant_transaction
from pgkgrag.graph.build import build

EXAMPLES = int(os.environ.get("KGRAG_TENANCY_EXAMPLES", "20"))
SHARED = ["Auth Service", "Session Store", "Billing", "Alpha Cluster"]
WORDS = {
    "a": ["Maple", "Cedar", "Birch", "Willow", "Aspen", "Rowan"],
    "b": ["Falcon", "Heron", "Osprey", "Kestrel", "Condor", "Plover"],
}
KINDS = ["Gateway", "Queue", "Ledger", "Cache", "Scheduler"]
VERBS = ["depends on", "calls", "feeds", "runs on"]
_tenants = itertools.count()


def names(side: str) -> list[str]:
    return [f"{w} {k}" for w in WORDS[side] for k in KINDS]


@st.composite
def corpus(draw: st.DrawFn, side: str) -> list[dict[str, Any]]:
    pool = names(side) + SHARED
    docs = []
    for i in range(draw(st.integers(2, 6))):
        chosen = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=4, unique=True))
        pairs = draw(
            st.lists(
                st.tuples(st.sampled_from(chosen), st.sampled_from(chosen), st.sampled_from(VERBS)).filter(
                    lambda p: p[0] != p[1]
                ),
                min_size=1,
                max_size=3,
            )
        )
        sentences = [f"The {a} {verb} the {b}." for a, b, verb in pairs]
        docs.append(
            {
                "doc_id": f"doc{i}",
                "title": f"Note {i}",
                "text": " ".join(sentences) + f" {' and '.join(chosen)} are listed here.",
                "entities": [{"name": n, "type": "Service"} for n in chosen],
                "relations": [
                    {"source": a, "target": b, "type": verb.upper().replace(" ", "_"), "quote": s}
                    for (a, b, verb), s in zip(pairs, sentences, strict=True)
                ],
            }
        )
    return docs


def foreign_marks(tenant: str, side: str) -> list[str]:
    """Strings only the other tenant's data holds: its document ids' tenant prefix and its names."""
    return [f'"{tenant}-'] + [w.lower() for w in WORDS[side]]


def leaks(results: dict[str, list[str]], marks: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, rows in results.items():
        hits = [row for row in rows if any(mark in row.lower() for mark in marks)]
        if hits:
            found[name] = hits[:3]
    return found


def populate(conn: psycopg.Connection, tmp: Path, tenant: str, docs: list[dict[str, Any]]) -> dict[str, list[str]]:
    prefixed = [{**d, "doc_id": f"{tenant}-{d['doc_id']}"} for d in docs]
    report = ingest(conn, tmp, prefixed, tenant=tenant, embedder=EMBEDDER)
    assert report.ok, report
    build(conn, tenant, EMBEDDER)
    return _graph_ids(conn, tenant)


def question_for(docs: list[dict[str, Any]]) -> str:
    first = docs[0]["entities"]
    return f"What does the {first[0]['name']} depend on, and who uses the {first[-1]['name']}?"


@pytest.fixture
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], Path]]:
    yield lambda: tmp_path_factory.mktemp("tenancy")


def predicted_ids(conn: psycopg.Connection, tenant: str, docs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The ids a corpus will get, before it is ingested (short texts: one chunk per document)."""
    names = sorted({e["name"] for d in docs for e in d["entities"]})
    keys = conn.execute(
        "SELECT array_agg(kgrag.entity_key('Service', n) ORDER BY 1) FROM unnest(%s::text[]) n", [names]
    ).fetchone()[0]  # type: ignore[index]
    doc_ids = sorted(f"{tenant}-{d['doc_id']}" for d in docs)
    hashes = sorted({hashlib.sha256(d["text"].encode()).hexdigest() for d in docs})
    return {
        "docs": doc_ids,
        "chunks": [f"{d}#0" for d in doc_ids],
        "entities": sorted(keys),
        "communities": [],
        "hashes": hashes,
    }


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(a_docs=corpus("a"), b_docs=corpus("b"), a_first=st.booleans())
def test_no_function_and_no_route_crosses_tenants(
    dsn: str, tmp: Callable[[], Path], a_docs: list[dict[str, Any]], b_docs: list[dict[str, Any]], a_first: bool
) -> None:
    n = next(_tenants)
    a, b = f"ta{n}", f"tb{n}"
    corpora = {a: ("a", a_docs), b: ("b", b_docs)}
    first, second = (a, b) if a_first else (b, a)
    questions = {t: question_for(corpora[t][1]) for t in (a, b)}
    with connect(dsn, role=WRITER) as conn:
        ids = {first: populate(conn, tmp(), first, corpora[first][1])}
        ids[second] = predicted_ids(conn, second, corpora[second][1])
        # the first tenant alone, already naming the second tenant's ids in its calls
        alone = answers(dsn, first, reads(questions[first], ids[second], ids[first]))
        predicted = ids[second]
        ids[second] = populate(conn, tmp(), second, corpora[second][1])
    assert {k: v for k, v in ids[second].items() if k != "communities"} == {
        k: v for k, v in predicted.items() if k != "communities"
    }
    # with the second tenant's rows present, the first tenant's answers do not move
    again = answers(dsn, first, reads(questions[first], ids[second], ids[first]))
    moved = {key: (alone[key], again.get(key)) for key in alone if alone[key] != again.get(key)}
    assert moved == {}, repr(moved)[:4000]  # in full: which answer moved, before and after
    for tenant, other in ((first, second), (second, first)):
        results = answers(dsn, tenant, reads(questions[tenant], ids[other], ids[tenant]))
        assert leaks(results, foreign_marks(other, corpora[other][0])) == {}
        assert results["citations_resolvable"] == ["[false, true]"]
    # the second tenant aims every writer at the first tenant's ids
    with connect(dsn) as admin:
        before = checksums(admin, first)
    with connect(dsn, role=WRITER) as conn, tenant_transaction(conn, second):
        for query, params in writes(ids[first]).values():
            try:  # refused (an id this tenant does not have) or done to its own rows: both fine
                with conn.transaction():
                    conn.execute(query, params)  # type: ignore[arg-type]
            except (psycopg.errors.InvalidParameterValue, psycopg.errors.ObjectNotInPrerequisiteState):
                pass
        assert conn.execute("UPDATE kgrag.chunk SET text = 'x' WHERE tenant_id = %s", [first]).rowcount == 0
        assert conn.execute("DELETE FROM kgrag.entity WHERE tenant_id = %s", [first]).rowcount == 0
    with connect(dsn) as admin:
        assert checksums(admin, first) == before


def test_another_tenants_entity_is_an_unknown_name(dsn: str, conn: psycopg.Connection, tmp_path: Path) -> None:
    """A walk from another tenant's entity fails exactly as one from a name nobody has: the error
    says nothing of what the other tenant holds."""
    for tenant in ("a", "b"):
        (tmp_path / tenant).mkdir()
        doc = {
            "doc_id": "d",
            "text": f"The {tenant.upper()} Gateway depends on the {tenant.upper()} Queue.",
            "entities": [
                {"name": f"{tenant.upper()} Gateway", "type": "Service"},
                {"name": f"{tenant.upper()} Queue", "type": "Service"},
            ],
        }
        populate(conn, tmp_path / tenant, tenant, [doc])
    foreign = "service:b gateway"
    with connect(dsn, role=READER) as reader:
        with tenant_transaction(reader, "b"):
            assert reader.execute("SELECT entity_id FROM kgrag.k_hop(ARRAY[%s], 0)", [foreign]).fetchall() == [
                (foreign,)
            ]
        for seed in (foreign, "service:nobody at all"):
            for call in ("SELECT * FROM kgrag.k_hop(ARRAY[%s], 2)", "SELECT * FROM kgrag.fanout(%s, 2)"):
                with tenant_transaction(reader, "a"):
                    with pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
                        reader.execute(call, [seed])
                    assert caught.value.diag.message_primary == f"no entity is named '{seed}'"


def test_the_suite_calls_every_public_function(
    admin: psycopg.Connection, record_property: Callable[[str, object], None]
) -> None:
    # the public API, and the helpers of kgrag_private the driver calls (its plumbing): any login
    # role granted kgrag_writer can call them too
    plumbing = set(re.findall(r"\bkgrag_private\.(\w+)\(", (REPO / "pgkgrag" / "queries.sql").read_text()))
    public = {r[0] for r in admin.execute("SELECT proname FROM pg_proc WHERE pronamespace = 'kgrag'::regnamespace")}
    public |= plumbing
    empty: dict[str, list[str]] = {"docs": ["d"], "chunks": [], "entities": [], "communities": [], "hashes": []}
    called = {name.split("/")[0] for name in reads("q", empty, empty)} | set(writes(empty)) | PURE | OWNER_ONLY | KEYED
    assert public == called, (public - called, called - public)
    record_property("public functions called as each tenant", len(public))
    record_property("kgrag_search routes", ", ".join(ROUTES))
    record_property("random two-tenant corpora (hypothesis examples)", EXAMPLES)
    pure = {
        r[0]
        for r in admin.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace)"
            " AND proname = ANY (%s)"
            " AND (provolatile = 'i' OR proname = 'lexical_query')",
            [sorted(PURE)],
        )
    }
    assert pure == PURE
    for role in (READER, WRITER):
        allowed = admin.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace)"
            " AND proname = ANY (%s)"
            " AND has_function_privilege(%s, oid, 'EXECUTE')",
            [sorted(OWNER_ONLY), role],
        ).fetchall()
        assert allowed == [], role


def test_writing_another_tenants_rows_is_refused(conn: psycopg.Connection) -> None:
    with tenant_transaction(conn, "t1"):
        conn.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t1', 'd', 'h')")
    for statement in (
        "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t1', 'e', 'h')",
        "UPDATE kgrag.document SET tenant_id = 't1' WHERE doc_id = 'mine'",
    ):
        with conn.transaction():
            conn.execute("SELECT kgrag.use_tenant('t2')")
            conn.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t2', 'mine', 'h')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"), conn.transaction():
                conn.execute(statement)
            conn.execute("DELETE FROM kgrag.document WHERE doc_id = 'mine'")
