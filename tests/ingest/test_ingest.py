"""Ingestion end to end with the provided and gazetteer extractors: graph, idempotency, updates,
deletes, staleness, embeddings reuse (concurrency and faults: test_reliability)."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import psycopg
import pytest
from conftest import WRITER, Server
from ingesting import OPS, CountingEmbedder, checksums, ingest, q, write_jsonl

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import Extraction, PreparedDocument, ProvidedExtractor
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor, KnownName, load_gazetteer
from pgkgrag.ingest.ingestor import Ingestor, delete_documents


def edges(conn: psycopg.Connection) -> dict[tuple[str, str, str], float]:
    return {(s, d, r): w for s, d, r, w in q(conn, "SELECT src, dst, rel, weight FROM kgrag.edge")}


def test_provided_extraction_builds_the_graph(conn: psycopg.Connection, tmp_path: Path) -> None:
    report = ingest(conn, tmp_path, OPS)
    assert report.ok and report.written == 5 and report.counts.chunks == 5
    assert report.rejected_extractions == {"relation endpoint is not an entity of the document": 1}
    entities = {e for (e,) in q(conn, "SELECT entity_id FROM kgrag.entity")}
    assert entities == {
        "service:auth service",
        "service:session store",
        "team:iam team",
        "service:payment module",
        "infrastructure:alpha cluster",
        "team:billing",
        "service:billing",
        "service:ledger sync",
        "service:token vault",
    }
    g = edges(conn)
    # co-occurrence weight = chunks citing both, both directions
    assert g[("service:auth service", "service:session store", "CO_OCCURS")] == 2  # d1, d5
    assert g[("service:session store", "service:auth service", "CO_OCCURS")] == 2
    assert g[("service:auth service", "infrastructure:alpha cluster", "CO_OCCURS")] == 1  # d2
    # typed relations with provenance; the type is normalized
    typed = q(
        conn,
        "SELECT src, dst, rel, confidence, evidence_chunk_id, evidence_quote FROM kgrag.edge"
        " WHERE rel <> 'CO_OCCURS' ORDER BY src, dst",
    )
    assert typed == [
        (
            "service:auth service",
            "service:session store",
            "DEPENDS_ON",
            1.0,
            "d1#0",
            "The Auth Service depends on the Session Store.",
        ),
        (
            "service:payment module",
            "service:auth service",
            "DEPENDS_ON",
            0.8,
            "d2#0",
            "The Payment Module calls the Auth Service.",
        ),
        ("team:iam team", "service:auth service", "OWNS", 1.0, "d1#0", ""),
    ]
    # the negated fact is evidence, never an edge
    assert q(conn, "SELECT src, dst, rel, negated FROM kgrag.relation_evidence WHERE negated") == [
        ("service:session store", "infrastructure:alpha cluster", "RUNS_ON", True)
    ]
    assert not any(r == "RUNS_ON" for _, _, r in g)
    # a source's strongest edge (what a degree cap of 1 keeps: the heaviest), degrees distinct neighbours
    strongest = q(
        conn,
        "SELECT dst, rel FROM kgrag.edge WHERE src = 'service:auth service'"
        " AND kgrag_private.among_strongest('t1', src, dst, rel, 1)",
    )
    assert strongest == [("service:session store", "CO_OCCURS")]
    assert q(conn, "SELECT degree FROM kgrag.entity WHERE entity_id = 'service:auth service'") == [(5,)]
    # mentions come from the names in the text; every spelling is kept once, with the documents
    # that gave it
    assert q(conn, "SELECT alias, sourced FROM kgrag.alias WHERE entity_id = 'service:auth service' ORDER BY 1") == [
        ("Auth Service", True),
        ("auth", True),
    ]
    sources = "SELECT alias, doc_id FROM kgrag.alias_source WHERE entity_id = 'service:auth service' ORDER BY 1, 2"
    assert q(conn, sources) == [("Auth Service", "d1"), ("Auth Service", "d2"), ("Auth Service", "d5"), ("auth", "d1")]


def test_a_name_goes_with_the_last_document_that_gave_it(conn: psycopg.Connection, tmp_path: Path) -> None:
    """ "auth" (given by d1 only) goes when d1 stops giving it; "Auth Service" (d1, d2, d5) stays
    until the last of them goes; a name written by hand stays though a document gave it too."""
    names = "SELECT alias FROM kgrag.alias WHERE entity_id = 'service:auth service' ORDER BY 1"
    ingest(conn, tmp_path, OPS)
    with tenant_transaction(conn, "t1"):
        conn.execute(
            "INSERT INTO kgrag.alias (tenant_id, entity_id, alias) VALUES ('t1', 'service:auth service', 'AS')"
        )
    changed = copy.deepcopy(OPS)
    changed[0]["entities"][0]["aliases"] = ["AS"]  # d1: "AS" instead of "auth"
    ingest(conn, tmp_path, changed)
    assert q(conn, names) == [("AS",), ("Auth Service",)]
    assert q(conn, "SELECT doc_id FROM kgrag.alias_source WHERE alias = 'AS'") == [("d1",)]
    delete_documents(conn, "t1", ["d1", "d2"])
    assert q(conn, names) == [("AS",), ("Auth Service",)]  # d5 still names it; "AS" was written by hand
    sources = "SELECT alias, doc_id FROM kgrag.alias_source WHERE entity_id = 'service:auth service'"
    assert q(conn, sources) == [("Auth Service", "d5")]
    delete_documents(conn, "t1", ["d5"])
    assert q(conn, "SELECT count(*) FROM kgrag.entity WHERE entity_id = 'service:auth service'") == [(0,)]


def test_two_types_with_one_name_stay_apart(conn: psycopg.Connection, tmp_path: Path) -> None:
    ingest(conn, tmp_path, OPS)
    rows = q(conn, "SELECT entity_id, type FROM kgrag.entity WHERE name = 'Billing' ORDER BY 1")
    assert rows == [("service:billing", "Service"), ("team:billing", "Team")]


def test_same_input_five_times_changes_nothing(
    conn: psycopg.Connection, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    first = ingest(conn, tmp_path, OPS)
    build(conn, "t1", HashEmbedder(512))
    runs = [checksums(conn, "t1")]
    for _ in range(4):
        again = ingest(conn, tmp_path, OPS)
        build(conn, "t1", HashEmbedder(512))
        assert again.unchanged == first.written and again.written == 0
        runs.append(checksums(conn, "t1"))
    distinct = {json.dumps(r, sort_keys=True) for r in runs}
    record_property("ingest + build runs", len(runs))
    record_property("tables checksummed", len(runs[0]))
    record_property("distinct checksum sets", len(distinct))
    assert len(distinct) == 1


def test_a_changed_document_replaces_its_own_contribution(conn: psycopg.Connection, tmp_path: Path) -> None:
    ingest(conn, tmp_path, OPS)
    changed = copy.deepcopy(OPS)
    # d5 no longer names the Session Store, and Token Vault (cited only by d5) is gone
    changed[4].update(
        text="Key Keeper backs the Auth Service.",
        entities=[{"name": "Key Keeper", "type": "Service"}, {"name": "Auth Service", "type": "Service"}],
    )
    report = ingest(conn, tmp_path, changed)
    assert report.written == 1 and report.unchanged == 4
    g = edges(conn)
    assert g[("service:auth service", "service:session store", "CO_OCCURS")] == 1  # recomputed, not decremented
    assert ("service:token vault", "service:auth service", "CO_OCCURS") not in g
    assert g[("service:key keeper", "service:auth service", "CO_OCCURS")] == 1
    assert q(conn, "SELECT count(*) FROM kgrag.entity WHERE entity_id = 'service:token vault'") == [(0,)]
    assert q(conn, "SELECT count(*) FROM kgrag.alias WHERE entity_id = 'service:token vault'") == [(0,)]
    # the same result as ingesting the changed corpus into an empty tenant
    ingest(conn, tmp_path, changed, tenant="fresh")
    assert _graph_rows(conn, "t1") == _graph_rows(conn, "fresh")


def _graph_rows(conn: psycopg.Connection, tenant: str) -> list[tuple]:
    with tenant_transaction(conn, tenant):
        return conn.execute(
            "SELECT 'edge', src, dst, rel, weight::text FROM kgrag.edge"
            " UNION ALL SELECT 'mention', entity_id, chunk_id, '', '' FROM kgrag.mention"
            " UNION ALL SELECT 'entity', entity_id, degree::text, '', '' FROM kgrag.entity ORDER BY 1, 2, 3, 4"
        ).fetchall()


def test_delete_removes_what_came_from_the_documents(conn: psycopg.Connection, tmp_path: Path) -> None:
    ingest(conn, tmp_path, OPS)
    build(conn, "t1", HashEmbedder(512))
    result = delete_documents(conn, "t1", ["d2", "nope"])
    assert result.documents == 1 and result.removed_entities == 1  # the Payment Module
    g = edges(conn)
    assert ("service:auth service", "infrastructure:alpha cluster", "CO_OCCURS") not in g
    assert not any(k[0] == "service:payment module" for k in g)
    assert q(conn, "SELECT count(*) FROM kgrag.chunk WHERE doc_id = 'd2'") == [(0,)]
    # the communities d2 fed went with it (their titles and reports): the next build makes them again
    assert q(conn, "SELECT count(*) FROM kgrag.community WHERE stale") == [(0,)]
    assert q(conn, "SELECT kgrag_private.communities_outdated()") == [(True,)]
    assert q(conn, "SELECT count(*) FROM kgrag.community_report WHERE strpos(report, 'd2#') > 0") == [(0,)]
    ingest(conn, tmp_path, [d for d in OPS if d["doc_id"] != "d2"], tenant="fresh")
    assert _graph_rows(conn, "t1") == _graph_rows(conn, "fresh")


def test_unchanged_chunk_text_is_not_embedded_again(conn: psycopg.Connection, tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    ingest(conn, tmp_path, OPS, embedder=embedder)
    chunk_texts = {d["text"] for d in OPS}
    assert chunk_texts <= set(embedder.calls)
    embedder.calls.clear()
    retitled = [{**d, "title": d["title"] + " (v2)"} for d in OPS]
    report = ingest(conn, tmp_path, retitled, embedder=embedder)
    assert report.written == 5
    assert not chunk_texts & set(embedder.calls)


def test_a_tenant_keeps_its_embedder(conn: psycopg.Connection, tmp_path: Path) -> None:
    ingest(conn, tmp_path, OPS[:1])

    class Other(HashEmbedder):
        name = "other"

    with pytest.raises(
        psycopg.errors.ObjectNotInPrerequisiteState, match="was embedded with 'hash' \\(512 dimensions\\), not 'other'"
    ):
        ingest(conn, tmp_path, OPS[1:2], embedder=Other(512))
    conn.rollback()
    # the rule is kgrag.use_embedder's, so a client of any language meets it too
    with tenant_transaction(conn, "t1"), pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
        conn.execute("SELECT kgrag.use_embedder('openai')")
    with tenant_transaction(conn, "t2"):  # a tenant with nothing embedded may choose
        assert conn.execute("SELECT kgrag.use_embedder('openai')").fetchone() == ("openai",)
        assert conn.execute("SELECT kgrag.setting('embedder') #>> '{}'").fetchone() == ("openai",)


def test_languages_and_limits(conn: psycopg.Connection, tmp_path: Path) -> None:
    report = ingest(
        conn,
        tmp_path,
        [
            {"doc_id": "pt", "text": "A renovação do contrato exige aceite.", "language": "pt-BR"},
            {"doc_id": "xx", "text": "Hello.", "language": "klingon"},
            {"doc_id": "big", "text": "x" * (6 * 1024 * 1024)},
        ],
    )
    assert report.written == 1
    errors = dict(report.rejected_inputs)
    assert any("unknown language 'klingon'" in e for e in errors.values())
    assert any("is 6.0 MB, above the limit of 5 MB" in e for e in errors.values())
    assert q(conn, "SELECT lang::text FROM kgrag.chunk WHERE doc_id = 'pt'") == [("portuguese",)]
    assert q(conn, "SELECT count(*) FROM kgrag.document WHERE doc_id IN ('xx', 'big')") == [(0,)]


def test_gazetteer_finds_names_word_bounded_and_accent_blind(conn: psycopg.Connection, tmp_path: Path) -> None:
    names = tmp_path / "names.csv"
    names.write_text("name,type,aliases\nSão Paulo,Location,SP;Sampa\nArt,Concept,\nPayment Module,Service,payments\n")
    docs = [
        {"doc_id": "g1", "text": "The team in SAO PAULO ships the payment module. A party, not Art."},
        {"doc_id": "g2", "text": "Sampa hosts payments; the partner is elsewhere."},
        {"doc_id": "g3", "text": "Nothing to see."},
    ]
    extractor = GazetteerExtractor(load_gazetteer(names))
    report = ingest(conn, tmp_path, docs, extractor=extractor)
    assert report.ok
    mentions = q(conn, "SELECT entity_id, chunk_id FROM kgrag.mention ORDER BY 1, 2")
    assert mentions == [
        ("concept:art", "g1#0"),
        ("location:sao paulo", "g1#0"),
        ("location:sao paulo", "g2#0"),
        ("service:payment module", "g1#0"),
        ("service:payment module", "g2#0"),
    ]


def test_gazetteer_finds_a_capitalized_one_word_name_only_where_the_text_capitalizes_it(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """The case rule of one-word names, as entity linking reads questions: "Time" (a magazine) is
    named where a text writes Time or TIME, not by "a long time" in a text that capitalizes other
    words; a text that capitalizes nothing has no case to read, and a name with a lower-case alias
    and a name of two words are found in any case."""
    names = [
        KnownName("Time", "Magazine"),
        KnownName("Taken", "Film"),
        KnownName("Payment Module", "Service", ("payments",)),
        KnownName("Ledger", "Service", ("ledger",)),
        KnownName("iPhone", "Product"),
    ]
    docs = [
        {"doc_id": "cap", "text": "Time named her person of the year."},
        {"doc_id": "upper", "text": "TIME ran the story."},
        {"doc_id": "inner", "text": "The iPhone launched."},  # a capital inside the word
        {
            "doc_id": "word",
            "text": "It took a long time; the fort was taken. Payments and the payment module wait for the ledger.",
        },
        {"doc_id": "none", "text": "notes: taken from the time log"},
    ]
    assert ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names)).ok
    assert q(conn, "SELECT entity_id, chunk_id FROM kgrag.mention ORDER BY 1, 2") == [
        ("film:taken", "none#0"),
        ("magazine:time", "cap#0"),
        ("magazine:time", "none#0"),
        ("magazine:time", "upper#0"),
        ("product:iphone", "inner#0"),
        ("service:ledger", "word#0"),
        ("service:payment module", "word#0"),
    ]


def test_gazetteer_reads_the_title_as_the_first_chunks(conn: psycopg.Connection, tmp_path: Path) -> None:
    """A name in a document's title is cited by its first chunk, and linked to what that chunk
    names, even where the text says only "it"; a title naming nothing known adds nothing."""
    names = [KnownName("Payment Module", "Service"), KnownName("Ledger", "Service"), KnownName("Audit", "Concept")]
    long_text = "It writes every charge to the Ledger. " + "It retries twice. " * 80 + "It is audited yearly."
    docs = [
        {"doc_id": "p", "title": "Payment Module (runbook)", "text": long_text},
        {"doc_id": "n", "title": "Notes", "text": "The Ledger is kept for seven years."},
        {"doc_id": "u", "text": "Nothing named here."},
    ]
    report = ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names))
    assert report.ok
    assert q(conn, "SELECT count(*) FROM kgrag.chunk WHERE doc_id = 'p'")[0][0] > 1
    assert q(conn, "SELECT entity_id, chunk_id FROM kgrag.mention ORDER BY 1, 2") == [
        ("service:ledger", "n#0"),
        ("service:ledger", "p#0"),
        ("service:payment module", "p#0"),  # the title's, first chunk only
    ]
    assert q(conn, "SELECT src, dst FROM kgrag.edge ORDER BY 1, 2") == [
        ("service:ledger", "service:payment module"),
        ("service:payment module", "service:ledger"),
    ]


def test_gazetteer_scales_to_thousands_of_names(conn: psycopg.Connection, tmp_path: Path) -> None:
    names = [KnownName(f"System {i:04d}", "Service") for i in range(3000)]
    docs = [
        {"doc_id": f"x{i}", "text": f"System {i:04d} talks to System {(i * 7) % 3000:04d} daily."} for i in range(1000)
    ]
    report = ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names), batch_size=500)
    assert report.written == 1000
    assert q(conn, "SELECT count(*) FROM kgrag.mention") == [(1998,)]  # x0 and x500 name one system twice


@pytest.mark.slow
def test_a_batch_touching_thousands_of_entities_fits_the_lock_table(conn: psycopg.Connection, tmp_path: Path) -> None:
    """Locks are striped: one batch with 10,000 entities and 1,250 documents holds a few hundred."""
    docs = [
        {
            "doc_id": f"e{i}",
            "text": " ".join(f"Thing {i * 8 + j} exists." for j in range(8)),
            "entities": [{"name": f"Thing {i * 8 + j}", "type": "Concept"} for j in range(8)],
        }
        for i in range(1250)
    ]
    report = ingest(conn, tmp_path, docs, batch_size=5000)
    assert report.ok and report.written == 1250
    assert q(conn, "SELECT count(*) FROM kgrag.entity") == [(10000,)]


class _Watched(ProvidedExtractor):
    """The provided extractor, noting each batch it extracts in a shared list of events, and the
    thread and connection it extracted with."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.seen: list[tuple[str, psycopg.Connection]] = []

    def extract(self, conn: psycopg.Connection, docs: list[PreparedDocument]) -> dict[str, Extraction | Exception]:
        self.events.append("extract")
        self.seen.append((threading.current_thread().name, conn))
        return super().extract(conn, docs)


class _ThreadNoting(HashEmbedder):
    """The hash embedder, noting the thread of each call; failing on the call numbered `fail_at`."""

    def __init__(self, fail_at: int = 0) -> None:
        super().__init__(512)
        self.threads: list[str] = []
        self.fail_at = fail_at

    def embed(self, texts: list[str]) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        if len(self.threads) == self.fail_at:
            raise RuntimeError("the model ran out of memory")
        return super().embed(texts)


MANY = [
    {
        "doc_id": f"m{i}",
        "text": f"Service {i} depends on Store {i % 4}. Team {i % 3} owns Service {i}.",
        "entities": [{"name": f"Service {i}", "type": "Service"}, {"name": f"Store {i % 4}", "type": "Store"}],
        "relations": [{"source": f"Service {i}", "target": f"Store {i % 4}", "type": "DEPENDS_ON"}],
    }
    for i in range(24)
]


def test_one_writer_embeds_a_batch_while_writing_the_one_before(
    conn: psycopg.Connection, server: Server, template: str, tmp_path: Path
) -> None:
    """With one writer, batch k is extracted and handed to the embedding thread before batch k-1
    is written (events: extract, extract, written, extract, written, ...); given a staging
    connection, that thread also extracts every batch, on that connection. The database ends as
    with each batch embedded then written (other databases, the same input)."""
    path = write_jsonl(tmp_path / "many.jsonl", MANY)
    databases = [server.create_database(template=template) for _ in range(2)]
    try:
        runs = {}
        with ExitStack() as stack:
            serial, staged = (stack.enter_context(connect(server.dsn(db), role=WRITER)) for db in databases)
            stage_conn = stack.enter_context(connect(server.dsn(databases[1]), role=WRITER))
            for way, writer, ahead, stager in (
                ("ahead", conn, True, None),
                ("serial", serial, False, None),
                ("staged", staged, True, stage_conn),
            ):
                events: list[str] = []
                embedder, extractor = _ThreadNoting(), _Watched(events)

                def heard(step: str, n: int, events: list[str] = events) -> None:
                    if step == "documents" and n:
                        events.append("written")

                options = {"embed_ahead": ahead, "progress": heard, "stage_conn": stager}
                Ingestor(writer, "t1", extractor, embedder, batch_size=5, **options).run([path])
                runs[way] = (events, embedder.threads[:5], extractor.seen, checksums(writer, "t1"))
        assert runs["serial"][0] == ["extract", "written"] * 5
        assert runs["ahead"][0] == ["extract", "extract", *["written", "extract"] * 3, "written", "written"]
        assert sorted(runs["staged"][0]) == ["extract"] * 5 + ["written"] * 5
        assert set(runs["ahead"][1]) == set(runs["staged"][1]) == {"pgkgrag-ahead_0"}
        assert set(runs["serial"][1]) == {"MainThread"}
        assert {(thread, c is conn) for thread, c in runs["ahead"][2]} == {("MainThread", True)}
        assert {(thread, c is stage_conn) for thread, c in runs["staged"][2]} == {("pgkgrag-ahead_0", True)}
        assert runs["ahead"][3] == runs["serial"][3] == runs["staged"][3]
        with tenant_transaction(conn, "t1"):
            assert q(conn, "SELECT count(*) FROM kgrag.document") == [(len(MANY),)]
    finally:
        for db in databases:
            server.drop_database(db)


@pytest.mark.parametrize("staging", [False, True], ids=["writer stages", "own staging connection"])
def test_a_failed_embedding_writes_nothing_of_its_batch(
    conn: psycopg.Connection, dsn: str, tmp_path: Path, staging: bool
) -> None:
    """The embedding thread's error ends the run: the batches before it are written, its own and
    the one extracted after it are not."""
    path = write_jsonl(tmp_path / "many.jsonl", MANY)
    with connect(dsn, role=WRITER) as other, pytest.raises(RuntimeError, match="ran out of memory"):
        stage_conn = other if staging else None
        Ingestor(conn, "t1", ProvidedExtractor(), _ThreadNoting(fail_at=3), batch_size=5, stage_conn=stage_conn).run(
            [path]
        )
    with tenant_transaction(conn, "t1"):
        written = q(conn, "SELECT doc_id FROM kgrag.document ORDER BY doc_id")
    assert sorted(d for (d,) in written) == sorted(d["doc_id"] for d in MANY[:10])


def test_how_long_a_name_or_type_may_be_is_the_tenants_setting(conn: psycopg.Connection, tmp_path: Path) -> None:
    """One rule, in SQL (setting max_alias_chars, 300): a 400-character name is refused with the
    setting named, for any client; the tenant raises the setting past what the JSONL reader once
    allowed (500), and a 600-character name and a 150-character type go in."""
    long_name, long_type = "N" * 400, "T" * 150
    docs = [{"doc_id": "n", "text": "n", "entities": [{"name": long_name, "type": "Thing"}]}]
    refused = ingest(conn, tmp_path, docs)
    assert [why for _, why in refused.rejected_inputs] == [
        f"document 'n': a name, type, identifier or alias of entity '{'N' * 60}' is 400 characters long, above 300"
        " (setting max_alias_chars)"
    ], refused.rejected_inputs
    with tenant_transaction(conn, "t1"):
        conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'max_alias_chars', '1000')")
    docs = [{"doc_id": "n", "text": "n", "entities": [{"name": "N" * 600, "type": long_type}]}]
    assert ingest(conn, tmp_path, docs).ok
    with tenant_transaction(conn, "t1"):
        assert conn.execute("SELECT length(name), length(type) FROM kgrag.entity").fetchall() == [(600, 150)]
