"""A curator in psql's place (a login role granted kgrag_curator and one tenant) works the review
queue; the decisions are recorded with who and when, the build applies them, and they survive a
re-ingestion of a changed document and a rebuild; deleting the document forgets them. The curator
may decide and nothing else; a reader may not decide."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import REPO, as_role
from ingesting import ingest, q
from people import ACME_STAFF, BETA_CLINIC, JOAO

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.db.server import _BIN
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build

ANA, CONTOSO, BRUNO = "person:ana costa", "organization:contoso", "person:bruno lima"
ENTITIES = [
    {"name": "Ana Costa", "type": "Person"},
    {"name": "Contoso", "type": "Organization"},
    {"name": "Bruno Lima", "type": "Person"},
]


def team(text: str) -> dict:
    return {
        "doc_id": "team",
        "text": text,
        "entities": ENTITIES,
        "relations": [
            {"source": "Ana Costa", "target": "Contoso", "type": "MANAGES", "quote": "Ana Costa manages Contoso"},
            {
                "source": "Ana Costa",
                "target": "Bruno Lima",
                "type": "MENTORS",
                "confidence": 0.4,
                "quote": "she may be mentoring Bruno Lima",
            },
            {
                "source": "Bruno Lima",
                "target": "Contoso",
                "type": "OWNS",
                "negated": True,
                "quote": "Bruno Lima does not own Contoso",
            },
        ],
    }


FIRST = team("Ana Costa manages Contoso, and she may be mentoring Bruno Lima. Bruno Lima does not own Contoso.")
CHANGED = team(
    "Ana Costa manages Contoso, they say, and she may be mentoring Bruno Lima. Bruno Lima does not own Contoso."
)


def edges(conn: psycopg.Connection) -> list[tuple]:
    return q(conn, "SELECT src, rel, dst FROM kgrag.edge WHERE rel <> 'CO_OCCURS' ORDER BY 1, 2, 3")


def test_a_curator_works_the_queue_and_the_decisions_last(
    conn: psycopg.Connection, admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str], tmp_path: Path
) -> None:
    assert ingest(conn, tmp_path, [FIRST]).ok
    build(conn, "t1", HashEmbedder(512))
    assert (ANA, "MANAGES", CONTOSO) in edges(conn)
    curator, reader = login_roles("kgrag_curator"), login_roles("kgrag_reader")
    for role in (curator, reader):
        admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [role])
    admin.commit()

    with psycopg.connect(as_role(dsn, curator)) as own:
        with tenant_transaction(own, "t1"):
            queue = own.execute("SELECT item, target FROM kgrag.review_queue WHERE item <> 'sample'").fetchall()
            assert ("low_confidence", f"{ANA}|MENTORS|{BRUNO}") in queue
            assert ("negated", f"{BRUNO}|OWNS|{CONTOSO}") in queue
            said = own.execute("SELECT kgrag.reject_relation('Ana Costa', 'manages', 'Contoso', 'she works there')")
            assert "rejected" in said.fetchone()[0]  # type: ignore[index]
            own.execute("SELECT kgrag.rename_entity('Bruno Lima', 'Bruno A. Lima')")
            own.execute("SELECT kgrag.approve(%s, 'checked with HR')", [f"{ANA}|MENTORS|{BRUNO}"])
            left = own.execute("SELECT target FROM kgrag.review_queue").fetchall()
            assert (f"{ANA}|MENTORS|{BRUNO}",) not in left
            decided = own.execute("SELECT kind, target, doc_id, decided_by FROM kgrag.decisions ORDER BY 1").fetchall()
        assert decided == [
            ("approve", f"{ANA}|MENTORS|{BRUNO}", "team", curator),
            ("reject_relation", f"{ANA}|MANAGES|{CONTOSO}", "team", curator),
            ("rename_entity", BRUNO, None, curator),
        ]
        # deciding is all it may do: no table of the graph, no forged author, no other tenant
        for statement in (
            "UPDATE kgrag.entity SET name = 'x'",
            "DELETE FROM kgrag.edge",
            "INSERT INTO kgrag.curation (tenant_id, kind, target, decided_by) VALUES ('t1', 'approve', 'x', 'someone')",
            "UPDATE kgrag.curation SET note = 'x'",
            "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t1', 'd', 'h')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(own, "t1"):
                own.execute(statement)
        with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(own, "t2"):
            pass
    with (  # a reader reads the queue, and may not decide
        psycopg.connect(as_role(dsn, reader)) as own,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
        tenant_transaction(own, "t1"),
    ):
        own.execute("SELECT kgrag.reject_relation('Bruno Lima', 'owns', 'Contoso')")

    # the build applies them; a changed document and a rebuild keep them
    assert edges(conn) == [(ANA, "MANAGES", CONTOSO), (ANA, "MENTORS", BRUNO)]  # decided, not applied yet
    built = build(conn, "t1", HashEmbedder(512))
    assert (built.renamed, built.relations_decided) == (1, 1)
    assert edges(conn) == [(ANA, "MENTORS", BRUNO)]
    names = "SELECT name FROM kgrag.entity WHERE entity_id = %s"
    assert q(conn, names, BRUNO) == [("Bruno A. Lima",)]
    summary = ingest(conn, tmp_path, [CHANGED])
    assert summary.ok and summary.written == 1
    assert edges(conn) == [(ANA, "MENTORS", BRUNO)] and q(conn, names, BRUNO) == [("Bruno A. Lima",)]
    built = build(conn, "t1", HashEmbedder(512), force=True)
    assert (built.renamed, built.relations_decided) == (0, 0)
    assert edges(conn) == [(ANA, "MENTORS", BRUNO)] and q(conn, names, BRUNO) == [("Bruno A. Lima",)]

    # approving a rejected relation takes the rejection back
    with tenant_transaction(admin, "t1"):
        admin.execute("SELECT kgrag.approve(%s)", [f"{ANA}|MANAGES|{CONTOSO}"])
    admin.commit()
    assert build(conn, "t1", HashEmbedder(512)).relations_decided == 1
    assert edges(conn) == [(ANA, "MANAGES", CONTOSO), (ANA, "MENTORS", BRUNO)]

    # deleting the document forgets what came from it, decisions about it included, and the name
    # decided for Bruno, whom no document cites any more
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['team'])")
    assert q(conn, "SELECT kind, doc_id FROM kgrag.curation WHERE doc_id IS NOT NULL") == []
    assert q(conn, "SELECT kind FROM kgrag.curation") == []


def test_decisions_are_checked(conn: psycopg.Connection, tmp_path: Path) -> None:
    assert ingest(conn, tmp_path, [FIRST]).ok
    for call, message in (
        ("SELECT kgrag.reject_relation('Ana Costa', 'owns', 'Contoso')", "no relation Ana Costa -\\[owns\\]-> Contoso"),
        ("SELECT kgrag.rename_entity('Bruno Lima', '  ')", "a name has 1 to 300 characters"),
        ("SELECT kgrag.rename_entity('Nobody', 'x')", "no entity is named"),
        ("SELECT kgrag.approve('no-such-thing')", "no review item or entity"),
        ("SELECT kgrag.approve('a|B|c')", "no relation"),
        ("SELECT kgrag.approve('person:ana costa', repeat('n', 2001))", "a note is at most 2,000 characters"),
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=message), tenant_transaction(conn, "t1"):
            conn.execute(call)


def readme_block() -> str:
    """The psql block of the README's "Curating the graph"."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Curating the graph") :]
    start = section.index("```sql") + len("```sql")
    return section[start : section.index("```", start)]


def owners_of(conn: psycopg.Connection, name: str) -> dict[str, str]:
    return dict(q(conn, "SELECT doc_id, entity_id FROM kgrag.entity_source WHERE name = %s", name))


def test_a_curator_in_psql_runs_the_readme_and_the_decisions_last(
    conn: psycopg.Connection, admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str], tmp_path: Path
) -> None:
    assert ingest(conn, tmp_path, [FIRST, ACME_STAFF, BETA_CLINIC]).ok
    build(conn, "t1", HashEmbedder(512))
    assert len(set(owners_of(conn, "João Souza").values())) == 2  # kept apart: nothing joins them
    curator = login_roles("kgrag_curator")
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [curator])
    admin.commit()
    script = readme_block().replace("kgrag.use_tenant('acme')", "kgrag.use_tenant('t1')")
    out = subprocess.run(
        [str(_BIN / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", as_role(dsn, curator)],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "namesakes|" in out.stdout and "nurse at Beta Clinic" in out.stdout
    assert f'merge_entities|namesake:{JOAO}@acme-staff+beta-clinic|["beta-clinic"]|acme-staff' in out.stdout

    built = build(conn, "t1", HashEmbedder(512))
    assert (built.renamed, built.relations_decided, built.namesakes_moved) == (1, 3, 1)
    mentors = f"SELECT evidence_quote FROM kgrag.edge WHERE src = '{ANA}' AND rel = 'MENTORS'"
    assert q(conn, mentors) == [("and she may be mentoring Bruno Lima",)]
    merged = {JOAO}
    assert set(owners_of(conn, "João Souza").values()) == merged
    assert ("organization:beta clinic",) in q(conn, "SELECT entity_id FROM kgrag.k_hop(ARRAY[%s], 1)", JOAO)
    # a changed document and a rebuild keep every decision
    changed = dict(BETA_CLINIC, text="João Souza was a nurse at Beta Clinic until March.")
    assert ingest(conn, tmp_path, [changed]).written == 1
    build(conn, "t1", HashEmbedder(512), force=True)
    assert set(owners_of(conn, "João Souza").values()) == merged
    assert edges(conn) == [
        (ANA, "MENTORS", BRUNO),
        ("person:carlos pereira", "MANAGES", JOAO),  # corrected: built from the WORKS_WITH evidence
        (JOAO, "WORKS_AT", "organization:acme"),
        (JOAO, "WORKS_AT", "organization:beta clinic"),
    ]
    assert q(conn, "SELECT name FROM kgrag.entity WHERE entity_id = %s", BRUNO) == [("Bruno A. Lima",)]
    assert q(conn, mentors) == [("and she may be mentoring Bruno Lima",)]

    # a split takes one document's namesake apart again, and lasts as well
    with psycopg.connect(as_role(dsn, curator)) as own, tenant_transaction(own, "t1"):
        own.execute("SELECT kgrag.split_entity(%s, 'beta-clinic', 'two people after all')", [JOAO])
    assert build(conn, "t1", HashEmbedder(512)).namesakes_moved == 1
    apart = owners_of(conn, "João Souza")
    assert apart["acme-staff"] == JOAO and apart["beta-clinic"] != JOAO
    ingest(conn, tmp_path, [BETA_CLINIC])
    assert owners_of(conn, "João Souza") == apart
    # what the curator split apart is decided: no namesakes item to approve away
    queued = "SELECT item FROM kgrag.review_queue WHERE target LIKE 'namesake:%%'"
    assert q(conn, queued) == []

    # the corrected relation stays corrected when its own document changes; approving takes it back
    carlos = "person:carlos pereira"
    staff = dict(ACME_STAFF, text=ACME_STAFF["text"] + " Both joined in 2019.")
    assert ingest(conn, tmp_path, [staff]).written == 1
    assert (carlos, "MANAGES", JOAO) in edges(conn) and (carlos, "WORKS_WITH", JOAO) not in edges(conn)
    with tenant_transaction(admin, "t1"):
        admin.execute("SELECT kgrag.approve(%s)", [f"{carlos}|WORKS_WITH|{JOAO}"])
    admin.commit()
    build(conn, "t1", HashEmbedder(512))
    assert (carlos, "WORKS_WITH", JOAO) in edges(conn) and (carlos, "MANAGES", JOAO) not in edges(conn)


def test_namesake_decisions_are_checked(conn: psycopg.Connection, tmp_path: Path) -> None:
    assert ingest(conn, tmp_path, [FIRST, ACME_STAFF, BETA_CLINIC]).ok
    nurse = owners_of(conn, "João Souza")["beta-clinic"]
    for call, message in (
        (f"SELECT kgrag.merge_entities('{JOAO}', '{JOAO}')", "are one entity already"),
        ("SELECT kgrag.merge_entities('Ana Costa', 'Bruno Lima')", "are not namesakes kept apart"),
        (f"SELECT kgrag.merge_entities('{JOAO}', 'Contoso')", "are not namesakes kept apart"),
        ("SELECT kgrag.merge_entities('João Souza', 'Acme')", "is ambiguous"),
        (f"SELECT kgrag.split_entity('{nurse}', 'acme-staff')", "gives no namesake of"),
        ("SELECT kgrag.split_entity('Contoso', 'team')", "gives no namesake of"),
        (f"SELECT kgrag.approve('namesake:{JOAO}x')", "no review item or entity"),
        ("SELECT kgrag.correct_relation('Ana Costa', 'manages', 'Contoso', 'co_occurs')", "the corrected relation is"),
        ("SELECT kgrag.correct_relation('Ana Costa', 'manages', 'Contoso', 'Manages')", "the corrected relation is"),
        ("SELECT kgrag.correct_relation('Ana Costa', 'owns', 'Contoso', 'RUNS')", "no relation Ana Costa"),
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=message), tenant_transaction(conn, "t1"):
            conn.execute(call)
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.approve(%s, 'two people indeed')", [f"namesake:{JOAO}"])
    assert q(conn, "SELECT item FROM kgrag.review_queue WHERE item = 'namesakes'") == []


def profile(text: str) -> dict:
    """Ana Costa's own page (titled with her name): her answer is its first sentence naming her."""
    return {"doc_id": "ana-profile", "title": "Ana Costa", "text": text, "entities": ENTITIES[:2], "relations": []}


def test_a_changed_answer_waits_for_a_curator(
    conn: psycopg.Connection, admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str], tmp_path: Path
) -> None:
    # (FIRST names her too: she stays when her page goes)
    assert ingest(conn, tmp_path, [FIRST, profile("Ana Costa is an accountant at Contoso. She joined in 2015.")]).ok
    build(conn, "t1", HashEmbedder(512))
    # (Contoso's answer comes from the same sentence: an item of its own)
    changed = (
        f"SELECT target, what FROM kgrag.review_queue WHERE item = 'answer_changed' AND strpos(target, '{ANA}') > 0"
    )
    assert q(conn, changed) == []  # a first answer is no change
    # the same text again, then a rebuild: no change either
    ingest(conn, tmp_path, [profile("Ana Costa is an accountant at Contoso. She joined in 2015.")])
    build(conn, "t1", HashEmbedder(512), force=True)
    assert q(conn, changed) == []

    assert ingest(conn, tmp_path, [profile("Ana Costa is the chief wombat officer of Contoso.")]).written == 1
    build(conn, "t1", HashEmbedder(512))
    [(target, what)] = q(conn, changed)
    assert target.startswith(f"answer:{ANA}@")
    assert 'was "Ana Costa is an accountant at Contoso."' in what and "chief wombat officer" in what

    curator = login_roles("kgrag_curator")
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [curator])
    admin.commit()
    with psycopg.connect(as_role(dsn, curator)) as own, tenant_transaction(own, "t1"):
        own.execute("SELECT kgrag.approve(%s, 'promoted')", [target])
        assert own.execute(changed).fetchall() == []
    build(conn, "t1", HashEmbedder(512))  # the approved answer is the one seen now
    assert q(conn, "SELECT answer_before FROM kgrag.entity WHERE entity_id = %s", ANA) == [(None,)]

    # the next change is an item of its own, from the answer approved
    assert ingest(conn, tmp_path, [profile("Ana Costa is the chief wombat officer of Initech.")]).written == 1
    build(conn, "t1", HashEmbedder(512))
    [(again, what)] = q(conn, changed)
    assert again != target and 'was "Ana Costa is the chief wombat officer of Contoso."' in what

    # deleting the document forgets the answers seen in it and the decisions about them
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['ana-profile'])")
    build(conn, "t1", HashEmbedder(512))
    assert q(conn, "SELECT count(*) FROM kgrag.curation") == [(0,)]
    assert q(conn, "SELECT entity_id FROM kgrag.entity WHERE entity_id = %s", ANA) == [(ANA,)]
    assert q(conn, "SELECT count(*) FROM kgrag.entity WHERE strpos(answer_before || answer, 'wombat') > 0") == [(0,)]


def test_a_curator_corrects_the_evidence_and_it_lasts(
    conn: psycopg.Connection, admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str], tmp_path: Path
) -> None:
    chart = {
        "doc_id": "org-chart",
        "text": "Org chart, May. Contoso is managed by Ana Costa since January.",
        "entities": ENTITIES[:2],
        "relations": [],
    }
    assert ingest(conn, tmp_path, [FIRST, chart]).ok
    build(conn, "t1", HashEmbedder(512))
    [(chunk,)] = q(conn, "SELECT chunk_id FROM kgrag.chunk WHERE doc_id = 'org-chart'")
    shown = f"SELECT evidence_chunk_id, evidence_quote FROM kgrag.edge WHERE src = '{ANA}' AND rel = 'MANAGES'"
    own_evidence = q(conn, shown)
    [(team_chunk,)] = q(conn, "SELECT chunk_id FROM kgrag.chunk WHERE doc_id = 'team'")
    assert own_evidence == [(team_chunk, "Ana Costa manages Contoso")]

    curator = login_roles("kgrag_curator")
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [curator])
    admin.commit()
    with psycopg.connect(as_role(dsn, curator)) as own:
        for args, message in (
            (("Ana Costa", "MANAGES", "Contoso", chunk, "managed by Bruno"), "does not say"),
            (("Ana Costa", "MANAGES", "Contoso", "no-such#0", "managed"), "does not say"),
            (("Ana Costa", "OWNS", "Contoso", chunk, "managed"), "no relation Ana Costa -\\[OWNS\\]-> Contoso"),
            (("Ana Costa", "MANAGES", "Contoso", chunk, ""), "a quote has 1 to 500 characters"),
        ):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=message), tenant_transaction(own, "t1"):
                own.execute("SELECT kgrag.correct_evidence(%s, %s, %s, %s, %s)", list(args))
        with tenant_transaction(own, "t1"):
            own.execute(
                "SELECT kgrag.correct_evidence('Ana Costa', 'manages', 'Contoso', %s, %s, 'clearer')",
                [chunk, "managed by Ana Costa"],
            )
    decided = [(chunk, "managed by Ana Costa")]
    assert q(conn, shown) == own_evidence  # decided, applied by the next build
    assert build(conn, "t1", HashEmbedder(512)).relations_decided == 1
    assert q(conn, shown) == decided
    # the relation's own document changes and the graph is rebuilt: the evidence chosen stays
    assert ingest(conn, tmp_path, [CHANGED]).written == 1
    assert q(conn, shown) == decided
    build(conn, "t1", HashEmbedder(512), force=True)
    assert q(conn, shown) == decided
    # the chosen chunk no longer says it: the relation shows its own evidence again
    assert ingest(conn, tmp_path, [dict(chart, text="Org chart, June. Contoso is run by Ana Costa.")]).written == 1
    assert q(conn, shown) == own_evidence
    # deleting that document forgets the decision
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['org-chart'])")
    assert q(conn, "SELECT kind FROM kgrag.curation") == []


def test_a_name_decided_for_an_entity_goes_with_its_last_document(conn: psycopg.Connection, tmp_path: Path) -> None:
    """A rename about an entity whose only document is deleted ends with it (forgotten, with why),
    and a later document naming the same thing is not renamed by it."""
    doc = {
        "doc_id": "gw",
        "text": "The Payment Gateway calls the Ledger.",
        "entities": [{"name": "Payment Gateway", "type": "Service"}, {"name": "Ledger", "type": "Service"}],
    }
    other = {"doc_id": "misc", "text": "The Ledger is audited.", "entities": [{"name": "Ledger", "type": "Service"}]}
    assert ingest(conn, tmp_path, [doc, other]).ok
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.rename_entity('Payment Gateway', 'Checkout Gateway')")
    # the gateway leaves its document by an ingestion, not a deletion: deleting another document
    # does not end the decision about it (nor give a reason that is not true)
    assert ingest(conn, tmp_path, [dict(doc, text="The Ledger is audited.", entities=doc["entities"][1:])]).ok
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['misc'])")
    assert q(conn, "SELECT kind FROM kgrag.curation") == [("rename_entity",)]
    assert ingest(conn, tmp_path, [doc]).ok
    build(conn, "t1", HashEmbedder(512))
    assert q(conn, "SELECT name FROM kgrag.entity WHERE entity_id = 'service:payment gateway'") == [
        ("Checkout Gateway",)
    ]
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['gw'])")
    history = "SELECT kind, state, why FROM kgrag.decision_history WHERE kind = 'rename_entity'"
    assert q(conn, history) == [("rename_entity", "forgotten", "its entity went with the last document that cited it")]
    assert ingest(conn, tmp_path, [dict(doc, doc_id="gw2")]).ok
    build(conn, "t1", HashEmbedder(512))
    assert q(conn, "SELECT name FROM kgrag.entity WHERE entity_id = 'service:payment gateway'") == [
        ("Payment Gateway",)
    ]
