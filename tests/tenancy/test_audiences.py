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
from psycopg.conninfo import conninfo_to_dict
from standby import hot_standby
from tenant_calls import EMBEDDER, _graph_ids, answers, reads

from pgkgrag.db.connections import READER, WRITER, connect, tenant_transaction
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

CURATOR = "kgrag_curator"
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
    views = ["chunks", "entities", "edges", "communities", "decisions", "decision_history", "review_queue", "staleness"]
    tables = [
        "document",
        "chunk",
        "entity",
        "alias",
        "edge",
        "mention",
        "relation_evidence",
        "entity_source",
        "community_report",
        "query_log",
        "ingest_failure",
        "set_aside",
        "curation_ended",
        "namesake_context",
        "alias_source",
        "community_member",
    ]
    for held in ([], ["hr"], ["finance"], ["finance", "hr"]):
        # the functions called with the ids it sees (an id of an audience's graph it lacks is no
        # entity for it: refused as an unknown name, test_an_audience_s_graph_is_its_holders_own)
        seen = ids | {"entities": [e for e in ids["entities"] if "~" not in e or e.split("~")[1] in held]}
        calls = reads(question, seen, seen)
        # every view and the tables a reader may select, whole (the use_groups call stays last: it narrows)
        narrowing = calls.pop("use_groups")
        calls |= {f"view {v}": (f"SELECT * FROM kgrag.{v}", []) for v in views}
        calls |= {f"table {t}": (f"SELECT * FROM kgrag.{t}", []) for t in tables}
        calls["use_groups"] = narrowing
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


def test_an_audience_s_graph_is_its_holders_own(dsn: str, tmp_path: Path, holders: Callable[..., str]) -> None:
    """What a document for hr says is a graph for hr's holders: its person, its relation, walked
    from the shared entity it names (its twin), never a row everyone reads, never a community or
    report; the others find no such entity by name or by id. Moved to finance and back, the same
    graph."""
    tenant = "audgraph"
    docs = [
        {
            "doc_id": "open",
            "text": "The Auth Service calls the Session Store.",
            "entities": [{"name": "Auth Service", "type": "Service"}, {"name": "Session Store", "type": "Service"}],
            "relations": [{"source": "Auth Service", "target": "Session Store", "type": "CALLS"}],
        },
        {
            "doc_id": "hr-review",
            "text": "Marta Quillfeather reviews the Auth Service after a grievance.",
            "entities": [
                {"name": "Marta Quillfeather", "type": "Person", "description": "grievance reviewer"},
                {"name": "Auth Service", "type": "Service", "description": "under grievance review"},
            ],
            "relations": [
                {"source": "Marta Quillfeather", "target": "Auth Service", "type": "REVIEWS"},
                # (a relation stated only as negated: an item of the review queue, were it queued)
                {"source": "Marta Quillfeather", "target": "Auth Service", "type": "OWNS", "negated": True},
            ],
            "access": ["hr"],
        },
    ]
    writer = holders(tenant, ["finance", "hr"], WRITER)
    _populate(writer, tmp_path, tenant, docs)
    with connect(dsn) as owner:
        shared = checksums(owner, tenant)
        marked = owner.execute(
            "SELECT entity_id FROM kgrag.entity WHERE tenant_id = %s AND entity_id LIKE '%%~%%' ORDER BY 1", [tenant]
        ).fetchall()
        assert marked == [("person:marta quillfeather~hr",), ("service:auth service~hr",)]
        # the shared entity keeps what the shared document says of it, nothing of hr's
        assert owner.execute(
            "SELECT description, degree FROM kgrag.entity WHERE tenant_id = %s AND entity_id = 'service:auth service'",
            [tenant],
        ).fetchone() == ("", 1)
        # communities are detected on each graph alone: an audience's entities are in communities of
        # its own (marked, as their reports), and the shared graph's are those of a tenant without
        # hr's document
        mixed = owner.execute(
            "SELECT count(*) FROM kgrag.community_member WHERE tenant_id = %s"
            " AND (strpos(entity_id, '~') > 0) <> (strpos(community_id, '~') > 0)",
            [tenant],
        ).fetchone()
        assert mixed == (0,)
        communities = "SELECT community_id FROM kgrag.community WHERE tenant_id = %s ORDER BY 1"
        marked_communities = [c for (c,) in owner.execute(communities, [tenant]) if "~" in c]
        assert marked_communities and all(c.endswith("~hr") for c in marked_communities)
        assert owner.execute(
            "SELECT count(*) FROM kgrag.community_report WHERE tenant_id = %s AND strpos(community_id, '~') > 0",
            [tenant],
        ).fetchone() == (len(marked_communities),)
    (tmp_path / "alone").mkdir()
    _populate(holders("audgraph0", ["finance", "hr"], WRITER), tmp_path / "alone", "audgraph0", docs[:1])
    with connect(dsn) as owner:
        alone = [c for (c,) in owner.execute(communities, ["audgraph0"])]
        assert [c for (c,) in owner.execute(communities, [tenant]) if "~" not in c] == alone
    hr = holders(tenant, ["hr"])
    with connect(hr, role=READER) as conn, tenant_transaction(conn, tenant):
        # one name, the shared entity first: no ambiguity between an entity and its twin
        assert conn.execute("SELECT kgrag.resolve_entities('{Auth Service}')").fetchone() == (["service:auth service"],)
        walked = conn.execute(
            "SELECT entity_id, hop FROM kgrag.k_hop('{Auth Service}', 1, direction => 'both') ORDER BY 1"
        ).fetchall()
        assert walked == [
            ("person:marta quillfeather~hr", 1),
            ("service:auth service", 0),
            ("service:auth service~hr", 0),
            ("service:session store", 1),
        ]
        ranked = conn.execute(
            "SELECT node_id FROM kgrag.personalized_pagerank('{Auth Service}') WHERE kind = 'entity' ORDER BY 1"
        ).fetchall()
        assert ("person:marta quillfeather~hr",) in ranked and ("service:auth service~hr",) in ranked, ranked
        edges = conn.execute("SELECT src_name, rel, dst_name, evidence_quote FROM kgrag.edges WHERE rel <> 'CO_OCCURS'")
        assert sorted(edges.fetchall()) == [
            ("Auth Service", "CALLS", "Session Store", ""),
            ("Marta Quillfeather", "REVIEWS", "Auth Service", ""),
        ]
        # hr's communities, with their reports: the global route answers from them too
        reports = conn.execute("SELECT community_id, report FROM kgrag.community_report ORDER BY 1").fetchall()
        assert any(c.endswith("~hr") and "Marta Quillfeather" in r for c, r in reports), reports
        globally = conn.execute(
            "SELECT ref_id FROM kgrag.kgrag_search(NULL, 'global', 'What are the main themes?',"
            " options => '{\"whole_collection\": true}')"
        ).fetchall()
        assert any(ref.endswith("~hr") for (ref,) in globally), globally
        linked = conn.execute("SELECT entity_id FROM kgrag.link_entities('Who is Marta Quillfeather?')").fetchall()
        assert linked == [("person:marta quillfeather~hr",)]
        # the router seeds an entity and its twin, and calls the name no ambiguity
        seeds, reason = conn.execute(
            "SELECT seeds, reason FROM kgrag.route(NULL, 'Who reviews the Auth Service?')"
        ).fetchone()  # type: ignore[misc]
        assert sorted(seeds) == ["service:auth service", "service:auth service~hr"] and "ambiguous" not in reason, (
            reason
        )
    nobody = holders(tenant, [])
    with connect(nobody, role=READER) as conn:
        with tenant_transaction(conn, tenant):
            told = str(conn.execute("SELECT * FROM kgrag.entities").fetchall()).lower()
            told += str(conn.execute("SELECT * FROM kgrag.k_hop('{Auth Service}', 2, direction => 'both')").fetchall())
            told += str(conn.execute("SELECT * FROM kgrag.personalized_pagerank('{Auth Service}')").fetchall())
            told += str(conn.execute("SELECT * FROM kgrag.communities").fetchall())
            told += str(conn.execute("SELECT * FROM kgrag.community_report").fetchall())
            told += str(
                conn.execute(
                    "SELECT * FROM kgrag.kgrag_search(NULL, 'global', 'What are the main themes?',"
                    " options => '{\"whole_collection\": true}')"
                ).fetchall()
            )
            assert "marta" not in told.lower() and "grievance" not in told.lower() and "~" not in told, told
        for named in ("Marta Quillfeather", "person:marta quillfeather~hr", "service:auth service~hr"):
            with (
                pytest.raises(psycopg.errors.InvalidParameterValue, match="no entity is named"),
                tenant_transaction(conn, tenant),
            ):
                conn.execute("SELECT * FROM kgrag.k_hop(%s, 1)", [[named]])
    # hr's curator finds nothing of hr's graph queued: no decision is taken on it
    with connect(holders(tenant, ["hr"], CURATOR), role=CURATOR) as conn, tenant_transaction(conn, tenant):
        queued = conn.execute("SELECT item, target FROM kgrag.review_queue").fetchall()
        assert queued and not [q for q in queued if "~" in q[1]], queued
        assert ("ambiguous_name", "name:auth service") not in queued  # an entity and its twin are one
    # a curator of no group learns nothing by approving a marked target: refused before any lookup,
    # whether it exists or not
    with connect(holders(tenant, [], CURATOR), role=CURATOR) as conn:
        for target in ("person:marta quillfeather~hr", "person:nobody at all~hr", "namesake:person:x~hr"):
            with (
                pytest.raises(psycopg.errors.FeatureNotSupported, match="decisions about the graph of an audience"),
                tenant_transaction(conn, tenant),
            ):
                conn.execute("SELECT kgrag.approve(%s)", [target])
    # a session staging a document for everyone cannot mark its entities as an audience's
    with connect(holders(tenant, ["hr"], WRITER), role=WRITER) as conn, conn.transaction(force_rollback=True):
        conn.execute("SELECT kgrag.use_tenant(%s)", [tenant])
        conn.execute("SELECT kgrag_private.stage_begin()")
        conn.execute("INSERT INTO pg_temp.kgrag_stage_document (doc_id, content_hash) VALUES ('staged', 'h')")
        conn.execute(
            "INSERT INTO pg_temp.kgrag_stage_chunk (doc_id, ordinal, char_start, char_end, text, content_hash)"
            " VALUES ('staged', 0, 0, 12, 'Staged Thing', 'h0')"
        )
        conn.execute(
            "INSERT INTO pg_temp.kgrag_stage_entity (doc_id, name, type, ordinals, audience)"
            " VALUES ('staged', 'Staged Thing', 'Thing', '{0}', 'hr')"
        )
        conn.execute("SELECT kgrag_private.ingest_apply()")
        ids = conn.execute("SELECT entity_id FROM kgrag.entity WHERE name = 'Staged Thing'").fetchall()
        assert ids == [("thing:staged thing",)]
    # a writer writes the rows of the graphs it sees (as it writes chunks), no other
    hr_writer = holders(tenant, ["hr"], WRITER)
    for mark, allowed in (("~finance", False), ("~finance,legal", False), ("~finance,hr", True), ("~hr", True)):
        with connect(hr_writer, role=WRITER) as conn, conn.transaction(force_rollback=True):
            conn.execute("SELECT kgrag.use_tenant(%s)", [tenant])
            insert = "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES (%s, %s, 'Forged', 'Service')"
            if allowed:
                conn.execute(insert, [tenant, "service:forged" + mark])
            else:
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                    conn.execute(insert, [tenant, "service:forged" + mark])
    # moved to finance, hr's holder loses it and finance's finds it; moved back, the same graph
    with connect(writer, role=WRITER) as conn:
        with tenant_transaction(conn, tenant):
            conn.execute("SELECT kgrag.set_access('{hr-review}', '{finance}')")
            assert conn.execute(
                "SELECT entity_id FROM kgrag.entity WHERE entity_id LIKE '%~%' ORDER BY 1"
            ).fetchall() == [("person:marta quillfeather~finance",), ("service:auth service~finance",)]
        with connect(hr, role=READER) as other, tenant_transaction(other, tenant):
            assert other.execute("SELECT count(*) FROM kgrag.edges WHERE rel = 'REVIEWS'").fetchone() == (0,)
        with tenant_transaction(conn, tenant):
            conn.execute("SELECT kgrag.set_access('{hr-review}', '{hr}')")
        build(conn, tenant, EMBEDDER)
    with connect(dsn) as owner:  # (but the searches logged meanwhile)
        assert {**checksums(owner, tenant), "query_log": ""} == {**shared, "query_log": ""}


def test_a_builder_holding_one_of_an_audience_s_groups_builds_the_graphs_it_sees(
    dsn: str, tmp_path: Path, holders: Callable[..., str]
) -> None:
    """A document for finance or hr is seen by hr's writer, whose build detects that graph's
    communities again, the same; those of a graph it does not see stay."""
    tenant = "halfheld"
    docs = [
        {
            "doc_id": doc_id,
            "text": f"The {a} calls the {b}.",
            "entities": [{"name": a, "type": "Service"}, {"name": b, "type": "Service"}],
            "relations": [{"source": a, "target": b, "type": "CALLS"}],
            **({"access": access} if access else {}),
        }
        for doc_id, a, b, access in (
            ("open", "Auth Service", "Session Store", None),
            ("both", "Garnet Ledger", "Quartz Queue", ["finance", "hr"]),
            ("hr-only", "Falcon Gateway", "Heron Queue", ["hr"]),
            ("fin-only", "Zircon Ledger", "Maple Queue", ["finance"]),
        )
    ]
    _populate(holders(tenant, ["finance", "hr"], WRITER), tmp_path, tenant, docs)
    count = "SELECT count(*) FROM kgrag.community WHERE tenant_id = %s AND community_id LIKE %s"
    with connect(dsn) as owner:
        before = {m: owner.execute(count, [tenant, f"%~{m}"]).fetchone() for m in ("hr", "finance,hr", "finance")}
    assert (0,) not in before.values()
    with connect(holders(tenant, ["hr"], WRITER), role=WRITER) as conn:
        build(conn, tenant, EMBEDDER, force=True)
    with connect(dsn) as owner:
        after = {m: owner.execute(count, [tenant, f"%~{m}"]).fetchone() for m in ("hr", "finance,hr", "finance")}
    assert after == before


def test_a_reader_may_not_read_cached_extractions(dsn: str, login: Callable[..., str]) -> None:
    reader = login(READER, "t1")
    with (
        connect(reader, role=READER) as conn,
        tenant_transaction(conn, "t1"),
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("SELECT response FROM kgrag.llm_cache")


def test_what_a_statement_sets_while_it_runs_lends_no_group(
    dsn: str, tmp_path: Path, holders: Callable[..., str], admin: psycopg.Connection
) -> None:
    """A role holding hr in another tenant, switching kgrag.tenant in the middle of a statement,
    a seal of a revoked key replayed in a later transaction, and the schema owner's own session
    acting with a key without groups: none of them sees the HR document (the review of revision
    0042's first form found all three)."""
    tenant = "midway"
    docs = [
        {"doc_id": "open", "text": "The Auth Service is sunlit."},
        {"doc_id": "hr-1", "text": "Falcon Gateway grievance filed.", "access": ["hr"]},
    ]
    _populate(holders(tenant, ["hr"], WRITER), tmp_path, tenant, docs)
    elsewhere = holders("elsewhere", ["hr"])  # holds hr, in another tenant, and acts for this one too
    admin.execute("SELECT kgrag.grant_tenant(%s, %s)", [conninfo_to_dict(elsewhere)["user"], tenant])
    admin.commit()
    switching = (
        "SELECT doc_id, set_config('kgrag.tenant', 'elsewhere', true) FROM kgrag.document"
        " WHERE tenant_id = %s ORDER BY doc_id DESC"
    )
    with connect(elsewhere, role=READER) as conn, tenant_transaction(conn, tenant):
        assert [r[0] for r in conn.execute(switching, [tenant])] == ["open"]
        # the helpers the policies call, called directly with either tenant: its own grants, no more
        asked = "SELECT kgrag_private.groups_for(%s), kgrag_private.may_see(%s, '{hr}')"
        assert conn.execute(asked, [tenant, tenant]).fetchone() == ([], False)
        assert conn.execute(asked, ["elsewhere", "elsewhere"]).fetchone() == (["hr"], True)
    # a key for hr, checked once, its seal kept; the key revoked; the seal replayed later
    key = admin.execute("SELECT kgrag.create_key('midway-hr', %s, 'reader', '{hr}')", [[tenant]]).fetchone()[0]  # type: ignore[index]
    admin.commit()
    nobody = holders(tenant, [])
    with connect(nobody, role=READER) as conn:
        with conn.transaction():
            conn.execute("SELECT kgrag.use_key(%s)", [key])
            kept = conn.execute(
                "SELECT current_setting('kgrag.tenant_seal'), current_setting('kgrag.key_role'),"
                " current_setting('kgrag.key_groups'), current_setting('kgrag.key_seal')"
            ).fetchone()
            assert conn.execute("SELECT count(*) FROM kgrag.document").fetchone() == (2,)
        admin.execute("SELECT kgrag.revoke_key('midway-hr')")
        admin.commit()
        with tenant_transaction(conn, tenant):
            replayed = conn.execute(
                "SELECT doc_id FROM kgrag.document, (SELECT set_config('kgrag.tenant_seal', %s, true),"
                " set_config('kgrag.key_role', %s, true), set_config('kgrag.key_groups', %s, true),"
                " set_config('kgrag.key_seal', %s, true)) AS forged ORDER BY doc_id",
                list(kept),  # type: ignore[arg-type]
            ).fetchall()
            assert replayed == [("open",)]
    # the schema owner's session (a service run as it) acting with a key of no group
    plain = admin.execute("SELECT kgrag.create_key('midway-plain', %s)", [[tenant]]).fetchone()[0]  # type: ignore[index]
    admin.commit()
    with connect(dsn) as owner:
        owner.execute("SET ROLE kgrag_reader")
        with owner.transaction():
            owner.execute("SELECT kgrag.use_key(%s)", [plain])
            assert owner.execute("SELECT kgrag.current_groups()").fetchone() == ([],)
            assert [r[0] for r in owner.execute("SELECT doc_id FROM kgrag.document")] == ["open"]


def test_a_document_going_into_an_audience_leaves_nothing_for_everyone(
    dsn: str, tmp_path: Path, holders: Callable[..., str]
) -> None:
    """The decisions about it end (kept for its audience), the query log forgets it, the
    communities it fed go until the next build; and a writer holding one of a document's groups
    may not move it for the others."""
    tenant = "retract"
    docs = [
        {
            "doc_id": "pub3",
            "text": "The Yeti Project is run by Olga Vantablack.",
            "entities": [{"name": "Yeti Project", "type": "Project"}, {"name": "Olga Vantablack", "type": "Person"}],
            "relations": [{"source": "Olga Vantablack", "target": "Yeti Project", "type": "RUNS"}],
        },
        {"doc_id": "both", "text": "Garnet Ledger invoiceworthy grievance.", "access": ["finance", "hr"]},
    ]
    writer = holders(tenant, ["finance", "hr"], WRITER)
    _populate(writer, tmp_path, tenant, docs)
    nobody = holders(tenant, [])
    with connect(writer, role=WRITER) as conn, tenant_transaction(conn, tenant):
        conn.execute(
            "SELECT kgrag.correct_evidence('Olga Vantablack', 'RUNS', 'Yeti Project', 'pub3#0',"
            " 'The Yeti Project is run by Olga Vantablack.')"
        )
    vec = "[" + ",".join(map(str, EMBEDDER.embed(["Who runs the Yeti Project?"])[0])) + "]"
    with connect(nobody, role=READER) as conn, tenant_transaction(conn, tenant):
        conn.execute("SELECT * FROM kgrag.kgrag_search(%s::vector, 'auto', 'Who runs the Yeti Project?')", [vec])
    with connect(writer, role=WRITER) as conn, tenant_transaction(conn, tenant):
        assert conn.execute("SELECT kgrag.set_access('{pub3}', '{hr}')").fetchone()[0]["moved"] == 1  # type: ignore[index]
    with connect(nobody, role=READER) as conn, tenant_transaction(conn, tenant):
        told = "\n".join(
            str(conn.execute(query).fetchall())
            for query in (
                "SELECT * FROM kgrag.curation",
                "SELECT * FROM kgrag.curation_ended",
                "SELECT * FROM kgrag.decision_history",
                "SELECT seeds, chunk_ids, reason FROM kgrag.query_log",
                "SELECT * FROM kgrag.communities",
                "SELECT * FROM kgrag.entities",
            )
        ).lower()
        assert "pub3" not in told and "vantablack" not in told and "yeti" not in told, told
    with connect(holders(tenant, ["hr"]), role=READER) as conn, tenant_transaction(conn, tenant):
        ended = conn.execute("SELECT doc_id, access, why FROM kgrag.curation_ended").fetchall()
        assert ended == [("pub3", ["hr"], "its document 'pub3' went into an audience")]
    # curators are bound as readers are: the one of hr sees its ended decision, the other nothing of
    # it in its queue or history, and neither may decide about a relation only hr's document held
    curated = {}
    for groups in ([], ["hr"]):
        with connect(holders(tenant, groups, CURATOR), role=CURATOR) as conn:
            with tenant_transaction(conn, tenant):
                curated[bool(groups)] = "\n".join(
                    str(conn.execute(query).fetchall())
                    for query in (
                        "SELECT * FROM kgrag.review_queue",
                        "SELECT * FROM kgrag.decision_history",
                        "SELECT doc_id FROM kgrag.curation_ended",
                    )
                ).lower()
            # (for hr's curator the relation is hr's graph's, where decisions are not taken yet:
            # every curator reads them)
            refused = (
                pytest.raises(psycopg.errors.FeatureNotSupported, match="decisions about the graph of an audience")
                if groups
                else pytest.raises(psycopg.errors.InvalidParameterValue, match="no entity is named 'Olga Vantablack'")
            )
            with refused, tenant_transaction(conn, tenant):
                conn.execute("SELECT kgrag.reject_relation('Olga Vantablack', 'RUNS', 'Yeti Project')")
    assert "pub3" not in curated[False] and "vantablack" not in curated[False], curated[False]
    assert "pub3" in curated[True]
    with (
        connect(holders(tenant, ["hr"], WRITER), role=WRITER) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="does not hold group 'finance'"),
        tenant_transaction(conn, tenant),
    ):
        conn.execute("SELECT kgrag.set_access('{both}', '{hr}')")


def test_what_a_run_for_a_group_could_not_take_is_named_to_the_group(
    tmp_path: Path, holders: Callable[..., str]
) -> None:
    tenant = "failing"
    folder = tmp_path / "hr"
    folder.mkdir()
    (folder / "review-ana.txt").write_text("Ana's review: a grievance.")
    (folder / "empty-review-bruno.txt").write_text("")
    (folder / "lines.jsonl").write_text('{"doc_id": "x"}\n')
    with connect(holders(tenant, ["hr"], WRITER), role=WRITER) as conn:
        summary = Ingestor(conn, tenant, ProvidedExtractor(), EMBEDDER, access=["hr"]).run([folder])
        assert summary.written == 1 and not summary.ok
    names = "SELECT doc_id FROM kgrag.ingest_failure ORDER BY 1"
    with connect(holders(tenant, []), role=READER) as conn, tenant_transaction(conn, tenant):
        assert conn.execute(names).fetchall() == []
    with connect(holders(tenant, ["hr"]), role=READER) as conn, tenant_transaction(conn, tenant):
        failed = [r[0] for r in conn.execute(names)]
        assert len(failed) == 2 and any("empty-review-bruno" in f for f in failed), failed


def test_groups_are_granted_to_a_tenants_role_and_taken_back(
    dsn: str, tmp_path: Path, holders: Callable[..., str], login_roles: Callable[[str], str], admin: psycopg.Connection
) -> None:
    tenant = "granting"
    _populate(
        holders(tenant, ["hr"], WRITER), tmp_path, tenant, [{"doc_id": "hr-1", "text": "Grievance.", "access": ["hr"]}]
    )
    stranger = login_roles(READER)  # no grant of the tenant
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="may not act for tenant 'granting'"):
        admin.execute("SELECT kgrag.grant_groups(%s, %s, '{hr}')", [stranger, tenant])
    admin.rollback()
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="groups are 0 to 32 names"):
        admin.execute("SELECT kgrag.grant_groups(%s, %s, '{HR}')", [stranger, tenant])
    admin.rollback()
    reader = holders(tenant, ["hr"])
    count = "SELECT count(*) FROM kgrag.document"
    with connect(reader, role=READER) as conn, tenant_transaction(conn, tenant):
        assert conn.execute(count).fetchone() == (1,)
    role = conninfo_to_dict(reader)["user"]
    assert admin.execute("SELECT kgrag.revoke_groups(%s, %s, '{hr}')", [role, tenant]).fetchone() == (1,)
    admin.commit()
    with connect(reader, role=READER) as conn, tenant_transaction(conn, tenant):
        assert conn.execute(count).fetchone() == (0,)


def test_a_caller_who_sees_few_chunks_gets_the_nearest_of_its_own(
    tmp_path: Path, holders: Callable[..., str], admin: psycopg.Connection
) -> None:
    """The audience probes (revision 0043): a caller holding one group ranks its own chunks whole,
    as the index would order them (Hamming, then cosine), and the probes name nothing it may not see."""
    tenant = "few"
    rng = __import__("random").Random(3)
    words = ["ledger", "harbour", "violet", "quarry", "tundra", "copper", "meadow", "signal", "orchid", "basalt"]
    docs = []
    for i in range(240):
        access = [None, ["a"], ["a"], ["a"], ["a"], ["b"], ["a", "b"]][i % 7]
        doc: dict[str, Any] = {
            "doc_id": f"d{i:03d}",
            "text": " ".join(rng.choices(words, k=12)) + f" item {i} at Station {i % 40}.",
            "entities": [{"name": f"Station {i % 40}", "type": "Place"}],  # each audience's graph its stations
        }
        if access:
            doc["access"] = access
        docs.append(doc)
    # few candidates, so the build counts every word as common (kgrag.lexeme_stats, per audience)
    admin.execute(
        "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'lexical_candidates', '10')", [tenant]
    )
    admin.commit()
    _populate(holders(tenant, ["a", "b"], WRITER), tmp_path, tenant, docs)
    b_only = holders(tenant, ["b"])
    question = "violet quarry signal"
    vec = "[" + ",".join(str(x) for x in EMBEDDER.embed([question])[0]) + "]"
    sees_b = "(access IS NULL OR access && '{b}')"
    with connect(b_only, role=READER) as conn, tenant_transaction(conn, tenant):
        # the audience list is kgrag_probe's, for its two probes: not a door of the tenant's roles
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute("SELECT kgrag_private.seen_audiences(%s)", [tenant])
        (coded,) = conn.execute(
            "SELECT kgrag_private.quantize(%s::vector, kgrag_private.tenant_centre())::text", [vec]
        ).fetchone()  # type: ignore[misc]
        by_probe = {
            halfvec: conn.execute(
                "SELECT kgrag_private.audience_nearest('chunk', %s::vector, %s::bit varying, 12, %s)",
                [vec, coded, halfvec],
            ).fetchone()[0]  # type: ignore[index]
            for halfvec in (False, True)
        }
        found = [r[0] for r in conn.execute("SELECT chunk_id FROM kgrag.search_chunks_vector(%s::vector, 5)", [vec])]
        entities_by_probe = conn.execute(
            "SELECT kgrag_private.audience_nearest('entity', %s::vector, %s::bit varying, 12, false)", [vec, coded]
        ).fetchone()[0]  # type: ignore[index]
        entities_found = [
            r[0] for r in conn.execute("SELECT entity_id FROM kgrag.search_entities_vector(%s::vector, 5, 0)", [vec])
        ]
        counted = dict(conn.execute("SELECT audience, sum(chunks) FROM kgrag.lexeme_stats GROUP BY 1").fetchall())
        conn.execute("SELECT kgrag.use_groups('{}')")
        narrowed = conn.execute(
            "SELECT kgrag_private.audience_nearest('chunk', %s::vector, %s::bit varying, 500, false)", [vec, coded]
        ).fetchone()
    # a writer holding b writes statistics for b, never for an audience naming a group it lacks
    stats = (
        "INSERT INTO kgrag.lexeme_stats (tenant_id, lang, lexeme, audience, chunks) VALUES (%s, 'simple', 'zz', %s, 99)"
    )
    with connect(holders(tenant, ["b"], WRITER), role=WRITER) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(conn, tenant):
            conn.execute(stats, [tenant, "a,b"])
        with tenant_transaction(conn, tenant):
            conn.execute(stats, [tenant, "b"])
            conn.execute("SELECT kgrag.refresh_lexeme_stats()")  # its own rows again, the a holders' kept
            rewritten = dict(conn.execute("SELECT audience, sum(chunks) FROM kgrag.lexeme_stats GROUP BY 1").fetchall())

    def nearest_seen(order: str, value: str, limit: int) -> list[str]:
        """The ids of the chunks the b holder sees, ordered by an expression, as superuser."""
        rows = admin.execute(
            f"SELECT chunk_id FROM kgrag.chunk WHERE tenant_id = %s AND {sees_b} ORDER BY {order}, chunk_id LIMIT %s",
            [tenant, value, limit],
        )
        return [r[0] for r in rows]

    hamming = nearest_seen("quantized <~> %s::bit varying", coded, 12)
    halfvec = nearest_seen("embedding::halfvec(512) <=> %s::halfvec(512)", vec, 12)
    cosine = nearest_seen("embedding <=> %s::vector", vec, 5)
    every = dict(
        admin.execute("SELECT audience, sum(chunks) FROM kgrag.lexeme_stats WHERE tenant_id = %s GROUP BY 1", [tenant])
    )
    assert set(every) == {"", "a", "b", "a,b"}  # the writer who built held both groups
    assert counted == {k: v for k, v in every.items() if k != "a"}  # the holder of b reads the rows it sees
    assert by_probe[False] == hamming and by_probe[True] == halfvec
    assert found == cosine  # every chunk it sees (fewer than the candidates) ranked exactly
    assert rewritten == counted  # ('zz' counted away; 'a,b' kept: the writer of b may not rewrite it)
    open_rows = admin.execute("SELECT chunk_id FROM kgrag.chunk WHERE tenant_id = %s AND access IS NULL", [tenant])
    public = {r[0] for r in open_rows}
    assert narrowed is not None and set(narrowed[0]) == public
    # the entities of the graphs the b holder sees (the shared one, b's and a,b's), as the index orders them
    entities_seen = (
        "SELECT entity_id FROM kgrag.entity WHERE tenant_id = %s AND quantized IS NOT NULL"
        " AND (audience IS NULL OR string_to_array(audience, ',') && '{b}')"
    )
    by_hamming = admin.execute(
        entities_seen + " ORDER BY quantized <~> %s::bit varying, entity_id LIMIT 12", [tenant, coded]
    )
    assert entities_by_probe == [r[0] for r in by_hamming]
    by_cosine = admin.execute(entities_seen + " ORDER BY embedding <=> %s::vector, entity_id LIMIT 5", [tenant, vec])
    assert entities_found == [r[0] for r in by_cosine]
    assert any(e.endswith("~b") for e in entities_by_probe) and not any(e.endswith("~a") for e in entities_by_probe)


@pytest.mark.slow
def test_a_hot_standby_shows_each_reader_the_audiences_it_holds(
    server: object, tmp_path: Path, holders: Callable[..., str], dsn: str
) -> None:
    """On a real hot standby (pg_basebackup -R), read-only: the holder of hr finds the HR document
    through the lexical and the vector lists (the audience probes run there too), a reader of no
    group finds only the document for everyone."""
    if getattr(server, "name", "") != "pg18":
        pytest.skip("the standby is made with the embedded server's own binaries (KGRAG_TEST_DSN is set)")
    tenant = "replica"
    docs = [
        {"doc_id": "open", "text": "The Maple Gateway is sunlit and calm."},
        {"doc_id": "hr-1", "text": "Falcon Heron grievance filed against the Maple Gateway.", "access": ["hr"]},
    ]
    _populate(holders(tenant, ["hr"], WRITER), tmp_path, tenant, docs)
    readers = {"hr": holders(tenant, ["hr"]), "none": holders(tenant, [])}
    question = "Falcon Heron grievance Maple Gateway"
    vec = "[" + ",".join(str(x) for x in EMBEDDER.embed([question])[0]) + "]"
    found: dict[str, set[str]] = {}
    with hot_standby(dsn) as standby:
        for name, reader in readers.items():
            replica = as_role(standby, str(conninfo_to_dict(reader)["user"]))
            with connect(replica, role=READER) as conn, tenant_transaction(conn, tenant):
                assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
                lexical = conn.execute("SELECT chunk_id FROM kgrag.search_chunks_lexical(%s, 10)", [question])
                vector = conn.execute("SELECT chunk_id FROM kgrag.search_chunks_vector(%s::vector, 10)", [vec])
                found[name] = {r[0] for r in lexical} | {r[0] for r in vector}
    assert found == {"hr": {"open#0", "hr-1#0"}, "none": {"open#0"}}
