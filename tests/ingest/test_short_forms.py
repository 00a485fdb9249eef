"""Within one document, a short form of a name ("Grace", "Ms. Liu", "G. Liu") that matches exactly
one longer name of the document is that entity, for every extractor: the keyphrases extractor
offline and entities given in JSONL alike. Two longer names it could be leave it alone."""

from __future__ import annotations

from pathlib import Path

import psycopg
from ingesting import ingest, q

from pgkgrag.ingest.extractors.keyphrases import KeyphraseExtractor

NOTES = [
    {
        "doc_id": "standup-0412",
        "title": "Stand-up, 12 April",
        "text": (
            "Grace Liu opened the stand-up for the Ledger Team. Grace reported that the migration finished "
            "on Tuesday. Grace reports to Omar Haddad since the reorganisation in March."
        ),
    },
    {
        "doc_id": "standup-0413",
        "title": "Stand-up, 13 April",
        "text": "Marcus Webb ran the retro for the Billing Team. Marcus asked for two more reviewers.",
    },
]


def test_the_keyphrases_extractor_folds_a_first_name_into_the_full_name(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    assert ingest(conn, tmp_path, NOTES, extractor=KeyphraseExtractor()).ok
    names = [name for (name,) in q(conn, "SELECT name FROM kgrag.entity WHERE type = 'Name' ORDER BY name")]
    assert "Grace Liu" in names and "Grace" not in names and "Marcus" not in names
    aliases = q(conn, "SELECT alias FROM kgrag.alias WHERE entity_id = 'name:grace liu' ORDER BY alias")
    assert ("Grace",) in aliases
    # the first name alone now seeds the full name's entity, and the page that answers comes first
    seeds = q(conn, "SELECT seeds FROM kgrag.route(question => 'Who does Grace report to?')")
    assert seeds == [(["name:grace liu"],)]
    first = q(
        conn,
        "SELECT ref_id FROM kgrag.kgrag_search(question => 'Who does Grace report to?', route => 'auto')"
        " WHERE kind = 'chunk' ORDER BY rank LIMIT 1",
    )
    assert first == [("standup-0412#0",)]


def test_given_entities_fold_too_and_an_ambiguous_short_form_stays(conn: psycopg.Connection, tmp_path: Path) -> None:
    docs = [
        {
            "doc_id": "memo",
            "text": "Ana Silva signed the lease. Ms. Silva asked A. Silva's team to move. Silva approved it.",
            "entities": [
                {"name": "Ana Silva", "type": "Person"},
                {"name": "Ms. Silva", "type": "Person"},
                {"name": "A. Silva", "type": "Person"},
                {"name": "Silva", "type": "Person", "aliases": ["the director"]},
                {"name": "Lease", "type": "Contract"},
            ],
            "relations": [{"source": "Silva", "target": "Lease", "type": "APPROVED", "quote": "Silva approved it."}],
        },
        {
            "doc_id": "two-graces",
            "text": "Grace Liu and Grace Park met. Grace took notes.",
            "entities": [
                {"name": "Grace Liu", "type": "Person"},
                {"name": "Grace Park", "type": "Person"},
                {"name": "Grace", "type": "Person"},
            ],
        },
    ]
    assert ingest(conn, tmp_path, docs).ok
    people = [name for (name,) in q(conn, "SELECT name FROM kgrag.entity WHERE type = 'Person' ORDER BY name")]
    assert people == ["Ana Silva", "Grace", "Grace Liu", "Grace Park"]
    aliases = [a for (a,) in q(conn, "SELECT alias FROM kgrag.alias WHERE entity_id = 'person:ana silva' ORDER BY 1")]
    assert {"A. Silva", "Ms. Silva", "Silva", "the director"} <= set(aliases)
    assert q(conn, "SELECT src, rel, dst FROM kgrag.edge WHERE rel = 'APPROVED'") == [
        ("person:ana silva", "APPROVED", "contract:lease")
    ]


def test_a_short_form_two_documents_give_to_two_people_is_ambiguous(conn: psycopg.Connection, tmp_path: Path) -> None:
    """Each document folds "Grace" into its own Grace; a question saying "Grace" seeds both and the
    reason says the name is ambiguous, naming them."""
    docs = [
        {"doc_id": "a", "text": "Grace Liu leads the Ledger Team. Grace hired two engineers."},
        {"doc_id": "b", "text": "Grace Park runs the Billing Team. Grace moved to Lisbon."},
    ]
    assert ingest(conn, tmp_path, docs, extractor=KeyphraseExtractor()).ok
    [(seeds, reason)] = q(conn, "SELECT seeds, reason FROM kgrag.route(question => 'Whom did Grace hire?')")
    assert sorted(seeds)[:2] == ["name:grace liu", "name:grace park"]
    assert 'the name "grace" is ambiguous: Grace Liu, Grace Park' in reason
    [(plain,)] = q(conn, "SELECT reason FROM kgrag.route(question => 'Whom did Grace Liu hire?')")
    assert "ambiguous" not in plain
