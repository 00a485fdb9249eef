"""Entity linking: the spellings of seed 001 (spaces, prepositions, word order, accents, typos)."""

from __future__ import annotations

import psycopg
import pytest
from corpus import add_entity


@pytest.fixture
def linked(tconn: psycopg.Connection) -> psycopg.Connection:
    add_entity(tconn, "t1", "Service", "ServicoAutenticacao", "auth")
    add_entity(tconn, "t1", "Infra", "ClusterDB")
    add_entity(tconn, "t1", "Service", "ModuloPagamento", "Payment Module")
    add_entity(tconn, "t1", "Team", "TimeIAM")
    add_entity(tconn, "t1", "Infra", "Forgotten Box", degree=0)  # isolated: never a seed
    add_entity(tconn, "t2", "Service", "Servico Secreto")
    return tconn


def link(conn: psycopg.Connection, question: str) -> list[tuple[str, str]]:
    rows = conn.execute("SELECT entity_id, tier FROM kgrag.link_entities(%s)", [question]).fetchall()
    return [(e, tier) for e, tier in rows]


@pytest.mark.parametrize(
    ("question", "entity", "tier"),
    [
        ("ClusterDB", "infra:clusterdb", "exact"),
        ("Cluster DB", "infra:clusterdb", "squashed"),
        ("servico de autenticacao", "service:servicoautenticacao", "squashed"),
        ("Serviço de Autenticação", "service:servicoautenticacao", "squashed"),
        ("modulo pagamento", "service:modulopagamento", "squashed"),
        ("what does the cluster db run?", "infra:clusterdb", "squashed"),
        ("who owns the payment module?", "service:modulopagamento", "phrase"),
        ("is auth down again", "service:servicoautenticacao", "token"),
        ("autenticacao servico", "service:servicoautenticacao", "contains|trigram"),
        ("servico de autenticaco", "service:servicoautenticacao", "trigram"),
        ("timeiam members", "team:timeiam", "token"),
    ],
)
def test_spellings_reach_the_entity(linked: psycopg.Connection, question: str, entity: str, tier: str) -> None:
    found = link(linked, question)
    assert found, question
    assert found[0][0] == entity
    assert found[0][1] in tier.split("|")


def test_partial_name_is_found_by_containment(linked: psycopg.Connection) -> None:
    assert link(linked, "pagamento")[0] == ("service:modulopagamento", "contains")


def test_isolated_entities_are_not_seeds(linked: psycopg.Connection) -> None:
    assert link(linked, "Forgotten Box") == []


def test_other_tenants_entities_are_invisible(linked: psycopg.Connection) -> None:
    assert all(e != "service:servico secreto" for e, _ in link(linked, "servico secreto"))


def test_scores_order_the_tiers(linked: psycopg.Connection) -> None:
    rows = linked.execute("SELECT entity_id, score, tier FROM kgrag.link_entities('ClusterDB and auth')").fetchall()
    assert [(e, t) for e, _, t in rows] == [("infra:clusterdb", "token"), ("service:servicoautenticacao", "token")]
    assert rows[0][1] == rows[1][1] == 7.0


@pytest.mark.parametrize("question", ["", "   ", "?!?", "the of and"])
def test_nothing_to_link(linked: psycopg.Connection, question: str) -> None:
    assert link(linked, question) == []


def test_isolated_entities_can_be_asked_for(linked: psycopg.Connection) -> None:
    rows = linked.execute("SELECT entity_id, tier FROM kgrag.link_entities('Forgotten Box', include_isolated => true)")
    assert rows.fetchall() == [("infra:forgotten box", "exact")]
