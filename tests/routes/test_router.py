"""The router on the sample corpus: the route each kind of question takes and the reason it gives,
negatives included."""

from __future__ import annotations

import psycopg
import pytest
from searching import ask, sql

from pgkgrag.embed.embedders import Embedder


@pytest.mark.parametrize(
    ("question", "route", "reason"),
    [
        ("What does the Auth Service depend on?", "local", "names Auth Service:"),
        # a name the question misspells is said to be spelled near, never named
        ("Which cluster does the Sesion Stor run on?", "local", "names no entity outright; its words are spelled near"),
        ("O que o Auth Service precisa para funcionar?", "local", "names Auth Service"),
        ("Who approves changes to the PayFlow contract?", "local", "names PayFlow Processing Agreement"),
        ("What are the main themes across the documents?", "global", "rule en-themes"),
        ("Give me an overview of the collection", "global", "rule en-overview"),
        ("Quais são os principais temas do acervo?", "global", "rule pt-temas"),
        ("Qual é o panorama do acervo como um todo?", "global", "rule pt-panorama"),
        ("Tell me about the Payment Gateway in general", "mixed", "rule en-general"),
        ("Payment Gateway, no contexto geral", "mixed", "rule pt-geral"),
        ("What happens when a deploy fails?", "vector", "no entity of the graph is named"),
        ("How do I bake a carrot cake?", "vector", "no entity of the graph is named"),
    ],
)
def test_the_router_picks_and_says_why(
    dconn: psycopg.Connection, use: Embedder, question: str, route: str, reason: str
) -> None:
    result = ask(dconn, use, question)
    assert result.route == route, result.reason
    assert reason in result.reason
    # a question the sample answers gets rows, each with its evidence; one it does not, none, and says so
    answered = question != "How do I bake a carrot cake?"
    assert bool(result.rows) == answered, result.reason
    assert all(row.payload["evidence_refs"] for row in result.rows)
    assert answered or result.reason.startswith("nothing cleared the floors")


@pytest.mark.parametrize(
    "question", ["How do I bake a carrot cake?", "Who won the 1998 football world cup?", "Como faço pão de queijo?"]
)
def test_negative_questions_return_nothing_and_the_log_says_why(
    dconn: psycopg.Connection, use: Embedder, question: str
) -> None:
    result = ask(dconn, use, question)
    assert result.rows == []
    assert result.reason.startswith("nothing cleared the floors")
    logged = sql(dconn, "SELECT route, reason, rows_returned FROM kgrag.query_log ORDER BY searched_at DESC LIMIT 1")
    assert logged == [(result.route, result.reason, 0)]


def test_forced_route_keeps_the_routers_opinion_in_the_reason(dconn: psycopg.Connection, use: Embedder) -> None:
    result = ask(dconn, use, "What does the Auth Service depend on?", "vector")
    assert result.route == "vector" and "chosen by the caller" in result.reason and "would pick local" in result.reason
