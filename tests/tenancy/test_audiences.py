"""Audiences inside a tenant: random corpora where some documents are for HR or finance only, and
login roles holding some groups. Every public function and route, called as each of them, holds no
name, word or id that only a document of a group it lacks holds (hypothesis, derandomized); a role
holding a group finds that group's documents; a narrowing only narrows; kgrag.set_access moves a
document out of the shared graph and back, to the same graph.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import as_role
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ingesting import checksums, ingest
from tenant_calls import EMBEDDER, _graph_ids, answers, reads

from pgkgrag.db.connections import READER, WRITER, connect, tenant_transaction
from pgkgrag.graph.build import build

EXAMPLES = int(os.environ.get("KGRAG_AUDIENCE_EXAMPLES", "6"))
SHARED = ["Auth Service", "Session Store", "Billing", "Alpha Cluster"]
# the words of each audience's documents: names and a codeword no other document says
WORDS = {
    None: ["Maple", "Cedar", "Birch"],
    "hr": ["Falcon", "Heron", "Osprey"],
    "finance": ["Quartz", "Garnet", "Zircon"],
}
CODEWORD = {None: "sunlit", "hr": "grievance", "finance": "invoiceworthy"}
KINDS = ["Gateway", "Queue", "Ledger"]
VERBS = ["depends on", "calls", "feeds"]
_tenants = itertools.count()


def names(audience: str | None) -> list[str]:
    return [f"{w} {k}" for w in WORDS[audience] for k in KINDS]


@st.composite
def corpus(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Documents for everyone, for hr and for finance (at least one of each), sharing names."""
    docs = []
    more = draw(st.lists(st.sampled_from([None, "hr", "finance"]), min_size=0, max_size=3))
    audiences = [None, "hr", "finance", *more]
    for i, audience in enumerate(audiences):
        pool = names(audience) + SHARED
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
        doc: dict[str, Any] = {
            "doc_id": f"{audience or 'all'}-doc{i}",
            "title": f"Note {i}",
            "text": " ".join(sentences) + f" {' and '.join(chosen)} are {CODEWORD[audience]}.",
            "entities": [{"name": n, "type": "Service", "description": f"{n}, {CODEWORD[audience]}"} for n in chosen],
            "relations": [
                {"source": a, "target": b, "type": verb.upper().replace(" ", "_"), "quote": s}
                for (a, b, verb), s in zip(pairs, sentences, strict=True)
            ],
        }
        if audience:
            doc["access"] = [audience]
        docs.append(doc)
    return docs


def hidden_marks(held: set[str]) -> list[str]:
    """What only the documents of groups not held say: their ids, names' words and codewords."""
    marks = []
    for audience in ("hr", "finance"):
        if audience not in held:
            marks += [f"{audience}-doc", CODEWORD[audience]] + [w.lower() for w in WORDS[audience]]
    return marks


def leaks(results: dict[str, list[str]], marks: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, rows in results.items():
        hits = [row for row in rows if any(mark in row.lower() for mark in marks)]
        if hits:
            found[name] = hits[:3]
    return found


@pytest.fixture
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], Path]]:
    yield lambda: tmp_path_factory.mktemp("audiences")


@pytest.fixture
def holders(dsn: str, login_roles: Callable[[str], str], admin: psycopg.Connection) -> Callable[..., str]:
    """holders(tenant, groups, granted=kgrag_reader) -> the DSN of a new login of the tenant
    granted that kgrag role and holding those groups."""

    def make(tenant: str, groups: list[str], granted: str = READER) -> str:
        role = login_roles(granted)
        admin.execute("SELECT kgrag.grant_tenant(%s, %s)", [role, tenant])
        if groups:
            admin.execute("SELECT kgrag.grant_groups(%s, %s, %s)", [role, tenant, groups])
        admin.commit()
        return as_role(dsn, role)

    return make


def _question(docs: list[dict[str, Any]]) -> str:
    words = " ".join(CODEWORD[a] for a in CODEWORD)
    return f"What does the {SHARED[0]} depend on, and who calls {docs[1]['entities'][0]['name']}? {words}"


def _populate(writer: str, tmp: Path, tenant: str, docs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Ingest and build as a writer login holding both groups; the ids the tenant's graph holds."""
    with connect(writer, role=WRITER) as conn:
        report = ingest(conn, tmp, docs, tenant=tenant, embedder=EMBEDDER)
        assert report.ok, report
        build(conn, tenant, EMBEDDER)
        return _graph_ids(conn, tenant)


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(docs=corpus())
def test_no_function_and_no_route_shows_a_group_not_held(
    tmp: Callable[[], Path], holders: Callable[..., str], docs: list[dict[str, Any]]
) -> None:
    tenant = f"aud{next(_tenants)}"
    ids = _populate(holders(tenant, ["finance", "hr"], WRITER), tmp(), tenant, docs)
    question = _question(docs)
    calls = reads(question, ids, ids)
    for held in ([], ["hr"], ["finance"], ["finance", "hr"]):
        results = answers(holders(tenant, held), tenant, calls)
        assert leaks(results, hidden_marks(set(held))) == {}, held
        assert results["current_groups"] == [f"[{held!r}]".replace("'", '"')]
        # what it holds, it finds: the documents of its groups by their codeword
        for audience in held:
            found = results["search_chunks_lexical"]
            assert any(f"{audience}-doc" in row for row in found), (audience, found[:3])


def test_a_narrowing_only_narrows(tmp_path: Path, holders: Callable[..., str]) -> None:
    tenant = "narrow"
    docs = [
        {"doc_id": "open", "text": "The Auth Service is sunlit.", "entities": [{"name": "Auth Service"}]},
        {"doc_id": "hr-1", "text": "Falcon Gateway grievance filed.", "access": ["hr"]},
        {"doc_id": "fin-1", "text": "Quartz Ledger invoiceworthy.", "access": ["finance"]},
    ]
    _populate(holders(tenant, ["finance", "hr"], WRITER), tmp_path, tenant, docs)
    hr_only = holders(tenant, ["hr"])
    with connect(hr_only, role=READER) as conn:
        with tenant_transaction(conn, tenant):
            seen = {r[0] for r in conn.execute("SELECT doc_id FROM kgrag.document")}
            assert seen == {"open", "hr-1"}
            assert conn.execute("SELECT kgrag.use_groups('{}')").fetchone() == ([],)
            assert {r[0] for r in conn.execute("SELECT doc_id FROM kgrag.chunks")} == {"open"}
            assert conn.execute("SELECT count(*) FROM kgrag.chunk WHERE doc_id = 'hr-1'").fetchone() == (0,)
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="does not hold group 'finance'"),
            tenant_transaction(conn, tenant),
        ):
            conn.execute("SELECT kgrag.use_groups('{finance}')")
        # a narrowing set by hand, for the session, only narrows too
        with tenant_transaction(conn, tenant):
            conn.execute("SELECT set_config('kgrag.groups', 'finance,hr', false)")
            assert conn.execute("SELECT kgrag.current_groups()").fetchone() == (["hr"],)
            assert {r[0] for r in conn.execute("SELECT doc_id FROM kgrag.document")} == {"open", "hr-1"}


def test_set_access_moves_a_document_out_of_the_graph_and_back(
    dsn: str, tmp_path: Path, holders: Callable[..., str]
) -> None:
    tenant = "moving"
    docs = [
        {
            "doc_id": "d1",
            "text": "The Falcon Gateway calls the Auth Service.",
            "entities": [{"name": "Falcon Gateway", "type": "Service"}, {"name": "Auth Service", "type": "Service"}],
            "relations": [{"source": "Falcon Gateway", "target": "Auth Service", "type": "CALLS"}],
        },
        {"doc_id": "d2", "text": "The Auth Service is sunlit.", "entities": [{"name": "Auth Service"}]},
    ]
    hr_writer = holders(tenant, ["hr"], WRITER)
    _populate(hr_writer, tmp_path, tenant, docs)
    with connect(dsn) as owner:  # every table's rows of the tenant, as they are
        before = checksums(owner, tenant)
    nobody = holders(tenant, [])
    # a writer holding no group may not put a document into one
    with (
        connect(holders(tenant, [], WRITER), role=WRITER) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="does not hold group 'hr'"),
        tenant_transaction(conn, tenant),
    ):
        conn.execute("SELECT kgrag.set_access('{d1}', '{hr}')")
    with connect(hr_writer, role=WRITER) as conn:
        with tenant_transaction(conn, tenant):
            moved = conn.execute("SELECT kgrag.set_access('{d1}', '{hr}')").fetchone()[0]  # type: ignore[index]
            assert moved["moved"] == 1
        build(conn, tenant, EMBEDDER)
    with connect(nobody, role=READER) as conn, tenant_transaction(conn, tenant):
        assert conn.execute("SELECT count(*) FROM kgrag.entity WHERE name = 'Falcon Gateway'").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM kgrag.edges WHERE rel = 'CALLS'").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM kgrag.chunk").fetchone() == (1,)
        assert conn.execute("SELECT documents FROM kgrag.graph_totals()").fetchone() == (1,)
    with connect(hr_writer, role=WRITER) as conn:
        with tenant_transaction(conn, tenant):
            assert conn.execute("SELECT kgrag.set_access('{d1}', NULL)").fetchone()[0]["moved"] == 1  # type: ignore[index]
        build(conn, tenant, EMBEDDER)
    with connect(dsn) as owner:
        assert checksums(owner, tenant) == before  # the same graph as before it moved
    with connect(nobody, role=READER) as conn, tenant_transaction(conn, tenant):
        assert conn.execute("SELECT count(*) FROM kgrag.edges WHERE rel = 'CALLS'").fetchone() == (1,)


def test_a_reader_may_not_read_cached_extractions(dsn: str, login: Callable[..., str]) -> None:
    reader = login(READER, "t1")
    with (
        connect(reader, role=READER) as conn,
        tenant_transaction(conn, "t1"),
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("SELECT response FROM kgrag.llm_cache")
