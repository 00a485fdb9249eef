"""Every door a tenant's role holds, tried as the attacker would (issue 55, revision 0041): a writer
forging, rewriting or deleting a curator's decisions, a curator bypassing the curation functions,
settings aimed at the operator's secrets or below any floor, the log's redaction aimed by its
caller, the question hash confirmed from a guess, and a transaction acting for two tenants."""

from __future__ import annotations

import hashlib
import http.server
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import psycopg
import pytest
from conftest import as_role
from ingesting import ingest, q
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from pgkgrag.db.connections import READER, WRITER, connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build
from pgkgrag.retrieval.search import run_search

TEAM = {
    "doc_id": "team",
    "text": "Ana Costa manages Contoso. Bruno Lima works with Ana Costa at Contoso.",
    "entities": [
        {"name": "Ana Costa", "type": "Person"},
        {"name": "Contoso", "type": "Organization"},
        {"name": "Bruno Lima", "type": "Person"},
    ],
    "relations": [
        {"source": "Ana Costa", "target": "Contoso", "type": "MANAGES", "quote": "Ana Costa manages Contoso"},
        {"source": "Bruno Lima", "target": "Ana Costa", "type": "WORKS_WITH", "quote": "works with Ana Costa"},
    ],
}
OTHER = {
    "doc_id": "other",
    "text": "Carla Dias leads the Falcon project at Contoso.",
    "entities": [{"name": "Carla Dias", "type": "Person"}, {"name": "Falcon", "type": "Product"}],
    "relations": [{"source": "Carla Dias", "target": "Falcon", "type": "LEADS", "quote": "Carla Dias leads"}],
}
MANAGES = "person:ana costa|MANAGES|organization:contoso"
SET = (
    "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', %s, %s::jsonb)"
    " ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value"
)


@pytest.fixture
def corpus(conn: psycopg.Connection, tmp_path: Path) -> None:
    assert ingest(conn, tmp_path, [TEAM, OTHER]).ok
    build(conn, "t1", HashEmbedder(512))


def role_of(dsn_of_role: str) -> str:
    return str(conninfo_to_dict(dsn_of_role)["user"])


@pytest.mark.usefixtures("corpus")
def test_a_writer_cannot_forge_rewrite_or_delete_a_decision(login: Callable[..., str]) -> None:
    curator, writer = login("kgrag_curator", "t1"), login(WRITER, "t1")
    with connect(curator) as conn, tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.reject_relation('Ana Costa', 'manages', 'Contoso', 'she works there')")
    with connect(writer) as conn:
        for attack in (
            "INSERT INTO kgrag.curation (tenant_id, kind, target, decided_by, decided_at)"
            f" VALUES ('t1', 'approve', '{MANAGES}', 'maria', '2025-01-01')",
            "UPDATE kgrag.curation SET decided_by = 'bob'",
            "UPDATE kgrag.curation SET decided_at = '2020-01-01'",
            "DELETE FROM kgrag.curation WHERE kind = 'reject_relation'",
            "INSERT INTO kgrag.curation_ended (tenant_id, kind, target, decided_by, decided_at, ended_by, ended_at,"
            " why) VALUES ('t1', 'approve', 'x', 'maria', now(), 'maria', now(), 'forged')",
            "DELETE FROM kgrag.curation_ended",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(conn, "t1"):
                conn.execute(attack)
        # nor may it call what ends the decisions of a deleted document
        with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(conn, "t1"):
            conn.execute("SELECT kgrag_private.end_decisions(ARRAY['team'])")
        with tenant_transaction(conn, "t1"):
            history = conn.execute("SELECT kind, target, decided_by, state FROM kgrag.decision_history").fetchall()
    assert history == [("reject_relation", MANAGES, role_of(curator), "in force")]


@pytest.mark.usefixtures("corpus")
def test_a_curator_decides_only_through_the_functions_and_can_search(login: Callable[..., str]) -> None:
    curator = login("kgrag_curator", "t1")
    with connect(curator) as conn:
        for attack in (
            "INSERT INTO kgrag.curation (tenant_id, kind, target, value)"
            " VALUES ('t1', 'rename_entity', 'person:ana costa', '')",
            "INSERT INTO kgrag.curation (tenant_id, kind, target) VALUES ('t1', 'reject_relation', 'made|UP|target')",
            "SELECT kgrag_private.decide('rename_entity', 'person:ana costa', '', NULL, '')",
            "SELECT kgrag_private.end_decisions(ARRAY['team'])",
            "SELECT kgrag.delete_documents(ARRAY['team'])",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(conn, "t1"):
                conn.execute(attack)
        for refused in (  # what the functions check, a curator cannot skip
            "SELECT kgrag.rename_entity('Ana Costa', '  ')",
            "SELECT kgrag.reject_relation('Made', 'up', 'Target')",
            "SELECT kgrag.approve('name:nobody at all')",
            "SELECT kgrag.correct_relation('Ana Costa', 'manages', 'Contoso', 'CO_OCCURS')",
            "SELECT kgrag.split_entity('Ana Costa', NULL)",
        ):
            with pytest.raises(psycopg.errors.InvalidParameterValue), tenant_transaction(conn, "t1"):
                conn.execute(refused)
        with tenant_transaction(conn, "t1"):
            conn.execute("SELECT kgrag.rename_entity('Ana Costa', 'Ana M. Costa')")
            who = conn.execute(
                "SELECT decided_by, decided_at > now() - interval '1 minute' FROM kgrag.curation"
            ).fetchall()
            # and it sees what its decisions change: search and context as a curator
            rows = conn.execute("SELECT count(*) FROM kgrag.kgrag_search(question => 'Who manages Contoso?')")
            assert rows.fetchone()[0] > 0  # type: ignore[index]
            blocks = conn.execute("SELECT count(*) FROM kgrag.context_blocks(question => 'Who manages Contoso?')")
            assert blocks.fetchone()[0] > 0  # type: ignore[index]
    assert who == [(role_of(curator), True)]


@pytest.mark.usefixtures("corpus")
def test_a_decision_forgotten_with_its_document_leaves_an_entry(
    conn: psycopg.Connection, login: Callable[..., str]
) -> None:
    curator, writer = login("kgrag_curator", "t1"), login(WRITER, "t1")
    with connect(curator) as own, tenant_transaction(own, "t1"):
        own.execute("SELECT kgrag.reject_relation('Ana Costa', 'manages', 'Contoso', 'wrong')")
        own.execute("SELECT kgrag.approve(%s, 'right after all')", [MANAGES])
    with connect(writer) as own, tenant_transaction(own, "t1"):
        own.execute("SELECT kgrag.delete_documents(ARRAY['team'])")
    history = q(
        conn,
        "SELECT kind, decided_by, state, ended_by, why FROM kgrag.decision_history ORDER BY decided_at, state",
    )
    assert history == [
        ("reject_relation", role_of(curator), "forgotten", role_of(writer), "its document 'team' was deleted"),
        ("approve", role_of(curator), "forgotten", role_of(writer), "its document 'team' was deleted"),
    ]
    assert q(conn, "SELECT count(*) FROM kgrag.curation") == [(0,)]
    with (  # a deletion is bounded, and says so rather than leaving documents behind
        connect(writer) as own,
        pytest.raises(psycopg.errors.InvalidParameterValue, match="at most 100,000"),
        tenant_transaction(own, "t1"),
    ):
        own.execute("SELECT kgrag.delete_documents(array_fill('x'::text, ARRAY[100001]))")


def test_a_replaced_decision_says_by_whom(conn: psycopg.Connection, tmp_path: Path, login: Callable[..., str]) -> None:
    assert ingest(conn, tmp_path, [TEAM, {**OTHER, "text": OTHER["text"] + " Ana Costa manages Contoso."}]).ok
    curator = login("kgrag_curator", "t1")
    with connect(curator) as own, tenant_transaction(own, "t1"):
        own.execute("SELECT kgrag.reject_relation('Ana Costa', 'manages', 'Contoso')")
        own.execute("SELECT kgrag.approve(%s)", [MANAGES])
        # decisions of another family on one target both hold: a rename and an approval of the entity
        own.execute("SELECT kgrag.rename_entity('Bruno Lima', 'Bruno L.')")
        own.execute("SELECT kgrag.approve('person:bruno lima')")
    rows = q(conn, "SELECT kind, state, ended_by, why FROM kgrag.decision_history ORDER BY decided_at")
    assert rows == [
        ("reject_relation", "replaced", role_of(curator), f"replaced by approve of {role_of(curator)}"),
        ("approve", "in force", None, None),
        ("rename_entity", "in force", None, None),
        ("approve", "in force", None, None),
    ]


class Listener(http.server.BaseHTTPRequestHandler):
    """Whatever a reranker would be sent: the attacker's listener."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        Listener.seen.append(dict(self.headers))
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Listener.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/rerank"
    finally:
        server.shutdown()


@pytest.mark.usefixtures("corpus")
def test_a_writer_cannot_aim_a_setting_at_the_operators_secrets_or_below_a_floor(
    dsn: str, admin: psycopg.Connection, login: Callable[..., str], listener: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = login(WRITER, "t1")
    with tenant_transaction(admin, "t1"):  # the owner's own choice for this tenant
        admin.execute(SET, ["reader_timeout_s", "5"])
    owners = (
        ("rerank_url", f'"{listener}"'),
        ("rerank_model", '"mine"'),
        ("rerank_api", '"cohere"'),
        ("reader_memory_mb", "0"),
        ("reader_timeout_s", "100000"),
        ("embedding_dimension", "8"),
        ("setting_limits", "{}"),
    )
    floors = (
        ("reader_memory_mb", "-1"),
        ("chunk_max_chars", "1"),
        ("search_timeout_ms", "0"),
        ("search_timeout_ms", "-1"),
        ("khop_timeout_ms", "0"),
        ("max_paths_walked", "0"),
        ("max_question_chars", "-5"),
        ("search_timeout_ms", "0.5"),
        ("search_timeout_ms", '"100"'),
        ("search_neighbours", '"yes"'),
        ("search_graph_ranking", '"anything"'),
        ("no_such_setting", "1"),
    )
    with connect(writer) as conn:
        for key, value in owners:
            with (
                pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"{key} is the schema owner's alone"),
                tenant_transaction(conn, "t1"),
            ):
                conn.execute(SET, [key, value])
        for key, value in floors:
            if key == "reader_memory_mb":
                continue  # the owner's alone, whatever the value: above
            with pytest.raises(psycopg.errors.InvalidParameterValue), tenant_transaction(conn, "t1"):
                conn.execute(SET, [key, value])
        # nor undo what the owner set for the tenant
        for undo in (
            "DELETE FROM kgrag.settings WHERE tenant_id = 't1' AND key = 'reader_timeout_s'",
            "UPDATE kgrag.settings SET key = 'search_timeout_ms' WHERE tenant_id = 't1' AND key = 'reader_timeout_s'",
        ):
            with tenant_transaction(conn, "t1"):
                assert conn.execute(undo).rowcount == 0
            with tenant_transaction(conn, "t1"):
                assert conn.execute("SELECT kgrag.setting('reader_timeout_s')").fetchone() == (5,)
        with tenant_transaction(conn, "t1"):  # within the floor and ceiling: the tenant's to tune
            conn.execute(SET, ["search_timeout_ms", "2500"])
            assert conn.execute("SELECT kgrag.setting('search_timeout_ms')").fetchone() == (2500,)
    # a reader's search sends the operator's key to no address a tenant chose
    monkeypatch.setenv("KGRAG_RERANK_API_KEY", "the-operators-key")
    with connect(dsn, role=READER) as conn:
        run_search(conn, "t1", HashEmbedder(512), "Who manages Contoso?", k=3)
    assert Listener.seen == []


@pytest.mark.usefixtures("corpus")
def test_the_owner_sets_a_tenants_reranker_and_the_rules_bind_the_owner_too(admin: psycopg.Connection) -> None:
    with tenant_transaction(admin, "t1"):
        admin.execute(SET, ["rerank_url", '"http://127.0.0.1:9/rerank"'])
        assert admin.execute("SELECT kgrag.setting('rerank_url')").fetchone() == ("http://127.0.0.1:9/rerank",)
    # the installing superuser passes no policy: the constraint holds it to the rules
    for key, value in (("rerank_url", '"file:///etc/passwd"'), ("search_timeout_ms", "0"), ("max_hops", '"4"')):
        with (
            pytest.raises(psycopg.errors.CheckViolation, match="settings_value_fits_its_rule"),
            tenant_transaction(admin, "*"),
        ):
            admin.execute(
                "UPDATE kgrag.settings SET value = %s::jsonb WHERE tenant_id = '*' AND key = %s", [value, key]
            )


def test_every_default_is_a_setting_its_rule_takes(admin: psycopg.Connection) -> None:
    with tenant_transaction(admin, "*"):
        faults = admin.execute(
            "SELECT key, kgrag_private.setting_fault(key, value) FROM kgrag.settings"
            " WHERE tenant_id = '*' AND kgrag_private.setting_fault(key, value) IS NOT NULL"
        ).fetchall()
    assert faults == []


def test_a_row_written_before_its_floor_is_read_within_it(admin: psycopg.Connection) -> None:
    # as a row a tenant wrote before revision 0041: the policy and the rule lifted to plant it
    rule = admin.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'settings_value_fits_its_rule'"
    ).fetchone()[0]  # type: ignore[index]
    admin.execute("ALTER TABLE kgrag.settings DROP CONSTRAINT settings_value_fits_its_rule")
    admin.execute("ALTER TABLE kgrag.settings NO FORCE ROW LEVEL SECURITY")
    admin.execute(
        "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES"
        " ('t1', 'search_timeout_ms', '0'), ('t1', 'khop_timeout_ms', '-1'), ('t1', 'search_neighbours', '\"yes\"')"
    )
    admin.execute("ALTER TABLE kgrag.settings FORCE ROW LEVEL SECURITY")
    admin.execute(f"ALTER TABLE kgrag.settings ADD CONSTRAINT settings_value_fits_its_rule {rule}")
    with tenant_transaction(admin, "t1"):
        read = admin.execute(
            "SELECT kgrag.setting('search_timeout_ms'), kgrag.setting('khop_timeout_ms'),"
            " kgrag.setting('search_neighbours')"
        ).fetchone()
    assert read == (1, 1, False)


@pytest.mark.usefixtures("corpus")
def test_a_writer_cannot_aim_the_logs_redaction(
    conn: psycopg.Connection, login: Callable[..., str], tmp_path: Path
) -> None:
    reader, writer = login(READER, "t1"), login(WRITER, "t1")
    with connect(reader) as own, tenant_transaction(own, "t1"):
        for question in ("Who manages Contoso?", "What does Carla Dias lead?"):
            own.execute("SELECT count(*) FROM kgrag.kgrag_search(question => %s)", [question])
    before = q(conn, "SELECT reason, seeds, chunk_ids FROM kgrag.query_log ORDER BY searched_at")
    assert any("Contoso" in reason for reason, _, _ in before)
    noted = Jsonb({"chunks": [], "entities": [], "names": ["Contoso", "the", "a"]})
    with connect(writer) as own:
        for attack, arguments in (
            ("SELECT kgrag_private.forget_in_logs(%s)", [noted]),
            ("SELECT kgrag_private.forgettable(ARRAY['team'])", None),
            ("UPDATE kgrag.query_log SET reason = '[forgotten]'", None),
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(own, "t1"):
                own.execute(attack, arguments)
        # nor prepare the scratch tables the deletion (run as the schema owner) writes through
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState), tenant_transaction(own, "t1"):
            own.execute("CREATE TEMP TABLE kgrag_touched (a text, b text, rel text, n integer) ON COMMIT DROP")
            own.execute(
                "INSERT INTO kgrag_touched VALUES ('person:ana costa', 'organization:contoso', 'CO_OCCURS', 999)"
            )
            own.execute("SELECT kgrag.delete_documents(ARRAY['other'])")
    assert q(conn, "SELECT reason, seeds, chunk_ids FROM kgrag.query_log ORDER BY searched_at") == before
    # a document whose entities are named as the words of every reason, deleted: the searches it
    # never reached keep their reasons
    words = sorted({w for reason, _, _ in before for w in reason.replace(":", " ").split() if len(w) > 3})[:20]
    aim = {"doc_id": "aim", "text": " ".join(words), "entities": [{"name": w, "type": "Concept"} for w in words]}
    with connect(writer) as own:
        ingest(own, tmp_path, [aim])
        with tenant_transaction(own, "t1"):
            own.execute("SELECT kgrag.delete_documents(ARRAY['aim'])")
    assert q(conn, "SELECT reason, seeds, chunk_ids FROM kgrag.query_log ORDER BY searched_at") == before
    # deleting a document still forgets what only it named, in the searches that reached it
    with connect(writer) as own, tenant_transaction(own, "t1"):
        own.execute("SELECT kgrag.delete_documents(ARRAY['other'])")
    after = q(conn, "SELECT reason FROM kgrag.query_log ORDER BY searched_at")
    assert not any("Carla Dias" in reason for (reason,) in after)
    assert any("Contoso" in reason for (reason,) in after)


@pytest.mark.usefixtures("corpus")
def test_the_log_keeps_nothing_a_guess_could_be_confirmed_with(
    conn: psycopg.Connection, login: Callable[..., str]
) -> None:
    reader = login(READER, "t1")
    question = "Who manages Contoso?"
    with connect(reader) as own, tenant_transaction(own, "t1"):
        own.execute("SELECT count(*) FROM kgrag.kgrag_search(question => %s)", [question])
    rows = q(conn, "SELECT row_to_json(x)::text FROM kgrag.query_log AS x")
    assert len(rows) == 1
    traces = {question, hashlib.md5(question.encode()).hexdigest(), hashlib.sha256(question.encode()).hexdigest()}
    assert not any(trace in row for (row,) in rows for trace in traces), rows
    columns = q(conn, "SELECT table_name FROM information_schema.columns WHERE column_name = 'question_hash'")
    assert columns == []


def test_a_transaction_acts_for_one_tenant_and_a_malformed_key_is_refused(
    admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str]
) -> None:
    one = admin.execute("SELECT kgrag.create_key('one', ARRAY['t1'])").fetchone()[0]  # type: ignore[index]
    two = admin.execute("SELECT kgrag.create_key('two', ARRAY['t2'])").fetchone()[0]  # type: ignore[index]
    admin.commit()
    service = login_roles(READER)
    with connect(as_role(dsn, service)) as conn:
        twice = pytest.raises(psycopg.errors.ActiveSqlTransaction, match="already acts for tenant 't1'")
        with twice, conn.transaction():
            conn.execute("SELECT kgrag.use_key(%s)", [one])
            conn.execute("SELECT kgrag.use_key(%s)", [two])
        for key in ("kgk_" + "0" * 300, one + "x", one.upper(), "", "kgk_" + "g" * 64):
            with pytest.raises(psycopg.errors.InvalidPassword), conn.transaction():
                conn.execute("SELECT kgrag.use_key(%s)", [key])
