"""The build after ingestion (pgkgrag build, pgkgrag.graph.build): communities, reports, answers
and what is stale, on small corpora."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import psycopg
from commands import run
from conftest import WRITER, as_role
from ingesting import OPS, ingest, q

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor, KnownName
from pgkgrag.ingest.ingestor import delete_documents


def test_build_regenerates_only_what_is_stale(conn: psycopg.Connection, tmp_path: Path) -> None:
    corpus = [
        *OPS,
        {
            "doc_id": "d6",
            "title": "Far",
            "text": "Moon Base talks to Mars Relay.",
            "entities": [
                {"name": "Moon Base", "type": "Infrastructure"},
                {"name": "Mars Relay", "type": "Infrastructure"},
            ],
        },
    ]
    ingest(conn, tmp_path, corpus)
    first = build(conn, "t1", HashEmbedder(512))
    assert first.communities is not None and first.communities.communities >= 2 and first.answers == 11
    reports = dict(q(conn, "SELECT community_id, generated_at FROM kgrag.community_report"))
    answers = dict(q(conn, "SELECT entity_id, answer FROM kgrag.entity"))
    moon = q(conn, "SELECT community_id FROM kgrag.community_member WHERE entity_id = 'infrastructure:moon base'")[0][0]
    # nothing changed: nothing is rebuilt
    again = build(conn, "t1", HashEmbedder(512))
    assert again.communities is None and again.reports.written == 0 and again.answers == 0
    # d6 changes: its entities' answers and its community go stale and only they are redone
    corpus[5] = {**corpus[5], "text": "Moon Base now talks to Mars Relay every hour."}
    ingest(conn, tmp_path, corpus)
    assert q(conn, "SELECT count(*) FROM kgrag.entity WHERE answer_stale") == [(2,)]
    assert q(conn, "SELECT community_id FROM kgrag.community WHERE stale") == [(moon,)]
    third = build(conn, "t1", HashEmbedder(512))
    assert third.answers == 2 and third.reports.written == 1
    after = dict(q(conn, "SELECT community_id, generated_at FROM kgrag.community_report"))
    assert {k for k in after if after[k] != reports.get(k)} == {moon}
    new_answers = dict(q(conn, "SELECT entity_id, answer FROM kgrag.entity"))
    assert {k for k in new_answers if new_answers[k] != answers[k]} == {
        "infrastructure:moon base",
        "infrastructure:mars relay",
    }


def test_reports_cite_real_chunks_and_answers_their_chunk(conn: psycopg.Connection, tmp_path: Path) -> None:
    ingest(conn, tmp_path, OPS)
    build(conn, "t1", HashEmbedder(512))
    for community_id, evidence, report in q(
        conn, "SELECT community_id, evidence_chunk_ids, report FROM kgrag.community_report"
    ):
        assert evidence, community_id
        assert q(conn, "SELECT count(*) FROM kgrag.chunk WHERE chunk_id = ANY(%s)", evidence) == [(len(evidence),)]
        assert "Subjects:" in report
    for name, answer, chunk_text in q(
        conn, "SELECT e.name, e.answer, c.text FROM kgrag.entity e JOIN kgrag.chunk c ON c.chunk_id = e.answer_chunk_id"
    ):
        assert answer in chunk_text, name
    assert q(conn, "SELECT count(*) FROM kgrag.community_report WHERE embedding IS NULL") == [(0,)]
    assert q(conn, "SELECT count(*) FROM kgrag.entity WHERE embedding IS NULL") == [(0,)]


def test_communities_are_deterministic(conn: psycopg.Connection, tmp_path: Path) -> None:
    ingest(conn, tmp_path, OPS)
    ingest(conn, tmp_path, list(reversed(OPS)), tenant="t2")
    build(conn, "t1", HashEmbedder(512))
    build(conn, "t2", HashEmbedder(512))
    members = {}
    for tenant in ("t1", "t2"):
        with tenant_transaction(conn, tenant):
            members[tenant] = conn.execute(
                "SELECT community_id, level, entity_id FROM kgrag.community_member JOIN kgrag.community"
                " USING (tenant_id, community_id) ORDER BY 1, 3"
            ).fetchall()
    assert members["t1"] == members["t2"] and members["t1"]


def test_an_entitys_answer_comes_from_its_own_page(conn: psycopg.Connection, tmp_path: Path) -> None:
    """The document titled with an entity's name is its page: its answer comes from there even
    where the page never names it and another document does; without a page, the first sentence
    naming it."""
    names = [KnownName("Payment Module", "Service"), KnownName("Ledger", "Service")]
    docs = [
        {"doc_id": "a", "title": "Incidents", "text": "The Payment Module paged twice. The Ledger lagged."},
        {"doc_id": "p", "title": "Payment Module", "text": "It charges cards. It writes to the Ledger."},
    ]
    assert ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names)).ok
    build(conn, "t1", HashEmbedder(512))
    assert q(conn, "SELECT entity_id, answer, answer_chunk_id FROM kgrag.entity ORDER BY 1") == [
        ("service:ledger", "The Ledger lagged.", "a#0"),
        ("service:payment module", "It charges cards.", "p#0"),
    ]


def test_a_page_titled_with_a_qualifier_is_an_entitys_own_page_after_one_titled_with_the_name(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """A page titled "Payment Module (service)" is the page about the Payment Module (a trailing parenthesis
    qualifies a title); where a page titled with the bare name exists too, that one wins, though
    the qualified one sorts first."""
    names = [KnownName("Payment Module", "Service"), KnownName("Ledger", "Service")]
    docs = [
        {"doc_id": "a", "title": "Incidents", "text": "The Payment Module paged twice. The Ledger lagged."},
        {"doc_id": "p", "title": "Payment Module (service)", "text": "It charges cards. It writes to the Ledger."},
        {"doc_id": "b", "title": "Ledger (book)", "text": "A ledger is a book of accounts."},
        {"doc_id": "l", "title": "Ledger", "text": "It keeps the balances."},
    ]
    assert ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names)).ok
    build(conn, "t1", HashEmbedder(512))
    assert q(conn, "SELECT entity_id, answer, answer_chunk_id FROM kgrag.entity ORDER BY 1") == [
        ("service:ledger", "It keeps the balances.", "l#0"),
        ("service:payment module", "It charges cards.", "p#0"),
    ]


def test_answers_written_before_are_chosen_again_as_the_readme_says(
    conn: psycopg.Connection,
    admin: psycopg.Connection,
    dsn: str,
    login_roles: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """An answer written by the rule before (a sentence of another document) stays until asked:
    as a login role granted kgrag_writer and the tenant, `UPDATE kgrag.entity SET answer_stale =
    true` then `pgkgrag build` chooses it again from the entity's own page."""
    names = [KnownName("Payment Module", "Service"), KnownName("Ledger", "Service")]
    docs = [
        {"doc_id": "a", "title": "Incidents", "text": "The Payment Module paged twice. The Ledger lagged."},
        {"doc_id": "p", "title": "Payment Module", "text": "It charges cards. It writes to the Ledger."},
    ]
    assert ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names)).ok
    build(conn, "t1", HashEmbedder(512))
    with tenant_transaction(admin, "t1"):  # what the rule before this release wrote
        admin.execute(
            "UPDATE kgrag.entity SET answer = 'The Payment Module paged twice.', answer_chunk_id = 'a#0'"
            " WHERE entity_id = 'service:payment module'"
        )
    writer = login_roles(WRITER)
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [writer])
    admin.commit()
    answer = "SELECT answer, answer_chunk_id FROM kgrag.entity WHERE entity_id = 'service:payment module'"
    with psycopg.connect(as_role(dsn, writer)) as own:
        built = run("build", "--tenant", "t1", dsn=as_role(dsn, writer))
        assert built.returncode == 0, built.stderr
        with tenant_transaction(own, "t1"):
            assert own.execute(answer).fetchall() == [("The Payment Module paged twice.", "a#0")]  # not stale
            own.execute("UPDATE kgrag.entity SET answer_stale = true")
        built = run("build", "--tenant", "t1", dsn=as_role(dsn, writer))
        assert built.returncode == 0, built.stderr
        with tenant_transaction(own, "t1"):
            assert own.execute(answer).fetchall() == [("It charges cards.", "p#0")]


def test_a_rewritten_report_keeps_to_its_templates_evidence(conn: psycopg.Connection, tmp_path: Path) -> None:
    """The rule an LLM summary meets is SQL's (kgrag_private.set_report_text), for any client: it
    says why it refuses, and a refused summary leaves the template as it was."""
    ingest(conn, tmp_path, OPS)
    build(conn, "t1", HashEmbedder(512))
    community, template = q(conn, "SELECT community_id, report FROM kgrag.community_report ORDER BY 1 LIMIT 1")[0]
    cited = q(conn, "SELECT evidence_chunk_ids[1] FROM kgrag.community_report WHERE community_id = %s", community)[0][0]

    def rewrite(text: str, community_id: str = community) -> str | None:
        return q(conn, "SELECT kgrag_private.set_report_text(%s, %s, 'llm:test')", community_id, text)[0][0]

    assert rewrite("   ") == rewrite("\n\t \n") == "empty summary"
    assert rewrite("It is about the gateway.") == "summary cites no chunk"
    assert rewrite(f"It is about the gateway [{cited}] and more [nowhere#9].") == (
        "summary cites a chunk the report does not"
    )
    assert rewrite(f"It is about it [{cited}].", "no-such-community") == "no template report to replace"
    assert q(conn, "SELECT report, generator FROM kgrag.community_report WHERE community_id = %s", community) == [
        (template, "template")
    ]
    assert rewrite(f"\n  It is about the gateway [{cited}].\n\n") is None  # stored without the spaces around
    assert q(conn, "SELECT report, generator FROM kgrag.community_report WHERE community_id = %s", community) == [
        (f"It is about the gateway [{cited}].", "llm:test")
    ]
    assert rewrite(f"Again [{cited}].") == "no template report to replace"  # an LLM text is not rewritten twice


def test_build_tells_its_progress_on_the_vectors_it_embeds(conn: psycopg.Connection, tmp_path: Path) -> None:
    """pgkgrag ingest and build show a line per step: the build's callback hears of every page of
    entity and report vectors, as many as it says it embedded."""
    ingest(conn, tmp_path, OPS)
    heard: dict[str, int] = {}
    built = build(conn, "t1", HashEmbedder(512), progress=lambda step, n: heard.update({step: heard.get(step, 0) + n}))
    done = {"entity embeddings": built.entity_embeddings, "report embeddings": built.report_embeddings}
    assert built.report_embeddings > 0  # (the entities' vectors came with the ingestion)
    assert heard == {step: n for step, n in done.items() if n}


def _topics(documents: int) -> list[dict[str, object]]:
    """Documents each naming four people of one of twelve teams and, one time in four, one of another
    team: a co-occurrence graph of a few hundred nodes whose communities nest (max size 25)."""
    rng = random.Random(7)
    teams = [[f"Person {t}-{p}" for p in range(30)] for t in range(12)]
    docs: list[dict[str, object]] = []
    for n in range(documents):
        team = teams[n % len(teams)]
        names = rng.sample(team, 4) + ([rng.choice(teams[rng.randrange(len(teams))])] if n % 4 == 0 else [])
        docs.append(
            {
                "doc_id": f"d{n:03d}",
                "text": " and ".join(names) + " met.",
                "entities": [{"name": name, "type": "Person"} for name in dict.fromkeys(names)],
            }
        )
    return docs


def _communities(conn: psycopg.Connection) -> dict[str, bool]:
    return dict(q(conn, "SELECT community_id, stale FROM kgrag.community"))


def test_a_change_moves_only_the_communities_it_reached(
    conn: psycopg.Connection,
    admin: psycopg.Connection,
    dsn: str,
    login_roles: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """A build after a change starts Leiden from the current communities and keeps each one the change
    did not reach (pgkgrag.graph.communities); `pgkgrag build --fresh` detects them from scratch, as
    the first build did, and the same graph then gives the same communities whatever came before."""
    docs = _topics(240)
    ingest(conn, tmp_path, docs)
    build(conn, "t1", HashEmbedder(512))
    fresh_before = _communities(conn)
    changed = docs[100]
    docs[100] = {
        **changed,
        "text": f"{changed['text']} Person 3-1 joined.",
        "entities": [*changed["entities"], {"name": "Person 3-1", "type": "Person"}],  # type: ignore[list-item]
    }
    ingest(conn, tmp_path, docs)
    now = _communities(conn)
    reached = {c for c, stale in now.items() if stale}
    assert reached and len(reached) < len(now) / 4
    written = dict(q(conn, "SELECT community_id, generated_at FROM kgrag.community_report"))
    built = build(conn, "t1", HashEmbedder(512))
    after = _communities(conn)
    kept = set(now) - reached
    assert kept <= set(after)  # every community the change did not reach, with its report as it was
    rewritten = dict(q(conn, "SELECT community_id, generated_at FROM kgrag.community_report"))
    assert {c for c in kept if rewritten[c] != written[c]} == set()  # (not even when its parent went)
    assert built.reports.written <= max(2, len(after) // 10)
    # from scratch: the same as a first build of the same documents in another tenant
    writer = login_roles(WRITER)
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [writer])
    admin.commit()
    done = run("build", "--tenant", "t1", "--fresh", dsn=as_role(dsn, writer))
    assert done.returncode == 0, done.stderr
    ingest(conn, tmp_path, docs, tenant="t2")
    build(conn, "t2", HashEmbedder(512))
    with tenant_transaction(conn, "t2"):
        elsewhere = {c for (c,) in conn.execute("SELECT community_id FROM kgrag.community").fetchall()}
    assert set(_communities(conn)) == elsewhere
    assert not kept <= elsewhere  # (a fresh detection would have moved some the change did not reach)
    assert set(fresh_before) != elsewhere
    # every report embedded again, as docs/upgrading.md says
    with tenant_transaction(conn, "t1"):
        conn.execute("UPDATE kgrag.community_report SET embedding = NULL, quantized = NULL")
    assert build(conn, "t1", HashEmbedder(512)).report_embeddings == len(elsewhere)


def test_a_report_keeps_its_vector_while_its_head_is_unchanged(conn: psycopg.Connection, tmp_path: Path) -> None:
    """kgrag_private.refresh_reports writes again a report whose text changed; its vector is kept when
    the text it is embedded from (kgrag.report_embedding_text, the first 1,000 characters) is the same,
    and made again when it is not."""
    ingest(conn, tmp_path, _topics(240))
    build(conn, "t1", HashEmbedder(512))
    long = q(conn, "SELECT community_id FROM kgrag.community_report WHERE length(report) > 1100 ORDER BY 1 LIMIT 2")
    assert len(long) == 2
    (tail,), (head,) = long
    with tenant_transaction(conn, "t1"):  # as if each had said something else: past its head, in it
        conn.execute(
            "UPDATE kgrag.community_report SET generated_hash = 'before', report = CASE community_id"
            " WHEN %s THEN report || ' (said before)' ELSE '(said before) ' || report END"
            " WHERE community_id IN (%s, %s)",
            [tail, tail, head],
        )
    vectors = "SELECT community_id, embedding::text FROM kgrag.community_report WHERE community_id IN (%s, %s)"
    before = dict(q(conn, vectors, tail, head))
    built = build(conn, "t1", HashEmbedder(512))
    assert built.reports.written == 2 and built.report_embeddings == 1
    after = dict(q(conn, vectors, tail, head))
    assert after[tail] == before[tail] and after[head] is not None


def test_a_community_stays_when_the_community_above_it_goes(conn: psycopg.Connection, tmp_path: Path) -> None:
    """Deleting a document deletes the communities it reached (stale) until the next build; a
    community below one of them that it did not reach stays, detached, with its report
    (kgrag_private.delete_communities: the parent's foreign key would cascade)."""
    ingest(conn, tmp_path, _topics(240))
    build(conn, "t1", HashEmbedder(512))
    reports = dict(q(conn, "SELECT community_id, generated_at FROM kgrag.community_report"))
    delete_documents(conn, "t1", ["d100"])
    left = dict(q(conn, "SELECT community_id, parent_id FROM kgrag.community WHERE level > 0"))
    detached = {c for c, parent in left.items() if parent is None}
    assert detached  # (their parents went)
    assert dict(
        q(
            conn,
            "SELECT community_id, generated_at FROM kgrag.community_report WHERE community_id = ANY (%s)",
            list(detached),
        )
    ) == {c: reports[c] for c in detached}
    built = build(conn, "t1", HashEmbedder(512))
    assert built.communities is not None
    assert q(conn, "SELECT count(*) FROM kgrag.community WHERE level > 0 AND parent_id IS NULL") == [(0,)]
