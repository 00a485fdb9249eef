"""The context an LLM gets (kgrag.context, kgrag.context_blocks) and the citations it may keep
(kgrag.citations_resolvable, kgrag.cited_chunks), on the sample corpus."""

from __future__ import annotations

import psycopg
import pytest
from conftest import DEMO_TENANT as TENANT
from searching import sql

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder


def test_citations_resolvable_and_cited_chunks(dconn: psycopg.Connection) -> None:
    community = sql(dconn, "SELECT community_id FROM kgrag.community LIMIT 1")[0][0]
    assert sql(dconn, "SELECT kgrag.citations_resolvable(ARRAY['svc-auth#0', 'inc-101#0'])") == [(True,)]
    assert sql(dconn, "SELECT kgrag.citations_resolvable(%s)", [community]) == [(False,)]
    assert sql(dconn, "SELECT kgrag.citations_resolvable(ARRAY['svc-auth#9'])") == [(False,)]
    assert sql(dconn, "SELECT kgrag.citations_resolvable('{}')") == [(True,)]
    refs = ["inc-101#0", "nope#0", "svc-auth#0", "inc-101#0"]
    rows = sql(dconn, "SELECT chunk_id, doc_id, title FROM kgrag.cited_chunks(%s)", refs)
    assert rows == [("inc-101#0", "inc-101", "INC-101 login outage"), ("svc-auth#0", "svc-auth", "Auth Service")]
    with tenant_transaction(dconn, "other"):
        assert dconn.execute("SELECT kgrag.citations_resolvable(ARRAY['svc-auth#0'])").fetchone() == (False,)


@pytest.mark.parametrize("budget", [120, 400, 900, 3000])
def test_the_context_budget_holds_with_relations_counted(dconn: psycopg.Connection, use: Embedder, budget: int) -> None:
    vector = use.embed(["Who approves changes to the PayFlow contract?"])[0]
    with tenant_transaction(dconn, TENANT):
        text = dconn.execute(
            "SELECT kgrag.context(%s, 'local', %s, %s)",
            [vector, "Who approves changes to the PayFlow contract?", budget],
        ).fetchone()[0]
        blocks = dconn.execute(
            "SELECT kind, ref_id, body, chars FROM kgrag.context_blocks(%s, 'local', %s, %s)",
            [vector, "Who approves changes to the PayFlow contract?", budget],
        ).fetchall()
    assert len(text) <= budget
    assert text == "\n\n".join(b[2] for b in blocks)
    assert sum(b[3] for b in blocks) + 2 * max(len(blocks) - 1, 0) == len(text)
    chunk_refs = [b[1] for b in blocks if b[0] == "chunk"]
    assert len(chunk_refs) == len(set(chunk_refs))
    if budget >= 900:
        assert "-[SIGNED]->" in text or "-[CO_OCCURS]->" in text or "-[DEPENDS_ON]->" in text  # relations are in
        assert "[contract-payflow | contract-payflow#0]" in text or "(contract-payflow#0)" in text
