"""The offline keyphrases extractor and `auto`, the default: plain files get a graph with no LLM
and no names list, English and Portuguese; documents that carry entities keep what they gave (and
their content hash); an ingestion that produced no graph says so."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from commands import run, summary
from conftest import Server
from ingesting import OPS, ingest

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.ingest.extractors.keyphrases import KeyphraseExtractor, language_of, names_in, stop_words

ENGLISH = (
    "The Payment Gateway depends on the Fraud Scanner, which Ana Costa runs from Lisbon.\n\n"
    "In 2021 the Fraud Scanner moved to the University of Porto data centre. The payment gateway "
    "team reviews fraud alerts weekly, and fraud alerts reach the Ledger Service."
)
PORTUGUESE = (
    "O Banco do Brasil assinou o contrato de renovação com a PayFlow em Lisboa. Ana Costa aprovou a "
    "renovação, e a Secretaria da Fazenda recebeu a cópia do contrato assinado."
)


def test_names_are_capitalized_runs_without_their_stop_words() -> None:
    assert names_in(ENGLISH, stop_words("en")) == [
        "Payment Gateway",
        "Fraud Scanner",
        "Ana Costa",
        "Lisbon",
        "Fraud Scanner",
        "University of Porto",
        "Ledger Service",
    ]
    assert names_in(PORTUGUESE, stop_words("pt")) == [
        "Banco do Brasil",
        "PayFlow",
        "Lisboa",
        "Ana Costa",
        "Secretaria da Fazenda",
    ]
    assert names_in("Columbia University and Harvard Law School.", stop_words("en")) == [
        "Columbia University",
        "Harvard Law School",
    ]


def test_the_language_is_the_configurations_else_guessed_from_stop_words() -> None:
    assert language_of(None, PORTUGUESE) == "pt" and language_of(None, ENGLISH) == "en"
    assert language_of("portuguese", ENGLISH) == "pt" and language_of("simple", PORTUGUESE) == "pt"
    assert language_of(None, "") == "en"


def test_a_language_code_means_what_the_tenants_setting_says(conn: psycopg.Connection, tmp_path: Path) -> None:
    """The stop words are those of the configuration SQL stems the document with: a tenant whose
    language_codes say "gl" is Portuguese gets Portuguese stop words for it (yake has no "gl"), so
    "In", which opens an English sentence and is no Portuguese stop word, stays a name."""
    with tenant_transaction(conn, "t1"):
        conn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'language_codes', %s)",
            ['{"gl": "portuguese"}'],
        )
    doc = {"doc_id": "gl", "text": ENGLISH, "language": "gl"}
    assert ingest(conn, tmp_path, [doc], extractor=KeyphraseExtractor()).ok
    with tenant_transaction(conn, "t1"):
        names = {r[0] for r in conn.execute("SELECT name FROM kgrag.entity WHERE type = 'Name'")}
        (config,) = conn.execute("SELECT lang::text FROM kgrag.document WHERE doc_id = 'gl'").fetchone()  # type: ignore[misc]
    assert config == "portuguese"
    assert "In" in names and "Payment Gateway" in names


@pytest.mark.slow
def test_plain_files_get_a_graph_by_default(server: Server, template: str, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ops.md").write_text(ENGLISH)
    (notes / "contrato.txt").write_text(PORTUGUESE)
    name = server.create_database(template=template)
    try:
        dsn = server.dsn(name)
        done = run("ingest", str(notes), "--embedder", "hash", "--tenant", "acme", dsn=dsn)
        assert done.returncode == 0 and "no graph" not in done.stderr, done.stderr
        with psycopg.connect(dsn) as conn:
            conn.execute("SELECT kgrag.use_tenant('acme')")
            entities = dict(conn.execute("SELECT name, type FROM kgrag.entity").fetchall())
            linked = conn.execute(
                "SELECT d.dst_name FROM kgrag.edges AS d WHERE d.src_name = 'Ana Costa' ORDER BY 1"
            ).fetchall()
        assert {"Payment Gateway", "Fraud Scanner", "Ana Costa", "Banco do Brasil", "Secretaria da Fazenda"} <= set(
            entities
        )
        assert entities["Ana Costa"] == "Name" and entities.get("fraud alerts") == "Concept"
        assert "The Payment" not in entities and "In" not in entities
        # Ana Costa is in both files: the graph links the English note to the Portuguese contract
        assert {"Banco do Brasil", "Fraud Scanner"} <= {row[0] for row in linked}

        none = run("ingest", str(notes), "--embedder", "hash", "--tenant", "bare", "--extractor", "provided", dsn=dsn)
        assert none.returncode == 0, none.stderr
        assert "tenant 'bare' has 2 documents and no graph" in none.stderr and "--extractor keyphrases" in none.stderr
    finally:
        server.drop_database(name)


@pytest.mark.slow
def test_documents_that_carry_entities_keep_their_hash_under_auto(
    server: Server, template: str, tmp_path: Path
) -> None:
    """auto is the default now; a corpus ingested with provided (the default before) is unchanged."""
    corpus = tmp_path / "ops.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in OPS))
    name = server.create_database(template=template)
    try:
        dsn = server.dsn(name)
        first = run("ingest", str(corpus), "--embedder", "hash", "--extractor", "provided", dsn=dsn)
        assert first.returncode == 0, first.stderr
        again = run("ingest", str(corpus), dsn=dsn)
        assert again.returncode == 0, again.stderr
        assert summary(again.stdout)["unchanged (skipped)"] == str(len(OPS)), again.stdout
        keyphrases = run("ingest", str(corpus), "--extractor", "keyphrases", dsn=dsn)
        assert keyphrases.returncode == 0, keyphrases.stderr
        assert summary(keyphrases.stdout)["written"] == str(len(OPS)), keyphrases.stdout
    finally:
        server.drop_database(name)


def test_a_titles_names_are_cited_by_the_first_chunk(conn: psycopg.Connection, tmp_path: Path) -> None:
    """An encyclopedia paragraph that never repeats its title ("He ...") is still about it: the
    title's names are cited by the document's first chunk and linked to the names there."""
    docs = [
        {"doc_id": "b", "title": "Ana Costa (engineer)", "text": "She moved to Lisbon in 2019. " + "She writes. " * 99},
        {"doc_id": "n", "title": "weekly notes", "text": "Lisbon hosts the review."},
    ]
    assert ingest(conn, tmp_path, docs, extractor=KeyphraseExtractor()).ok
    with tenant_transaction(conn, "t1"):
        mentions = conn.execute(
            "SELECT e.name, m.chunk_id FROM kgrag.mention AS m JOIN kgrag.entity AS e USING (tenant_id, entity_id)"
            " ORDER BY 1, 2"
        ).fetchall()
        linked = conn.execute("SELECT dst_name FROM kgrag.edges WHERE src_name = 'Ana Costa'").fetchall()
        chunks = conn.execute("SELECT count(*) FROM kgrag.chunk WHERE doc_id = 'b'").fetchone()
    assert chunks is not None and chunks[0] > 1  # the first chunk only cites the title's names
    assert mentions == [("Ana Costa", "b#0"), ("Lisbon", "b#0"), ("Lisbon", "n#0")]
    assert linked == [("Lisbon",)]


def test_a_key_or_hash_in_the_text_is_no_name_and_loses_nothing(conn: psycopg.Connection, tmp_path: Path) -> None:
    """A certificate's fingerprint or a base64 line in a page (Node's tls docs hold a 1,024-character
    one) is one long "word": it is neither a name nor part of a concept, and the document is
    stored (it was refused whole: the name was longer than max_alias_chars)."""
    key = "B56CE45C" + "A1B2C3D4E5F60718" * 63
    text = f"The Ledger Service pins the key {key} and its fallback {key.lower()} for the Payment Gateway."
    assert names_in(text, stop_words("en")) == ["Ledger Service", "Payment Gateway"]
    summary = ingest(conn, tmp_path, [{"doc_id": "tls", "text": text}], extractor=KeyphraseExtractor())
    assert summary.ok and summary.written == 1
    with tenant_transaction(conn, "t1"):
        names = {name for (name,) in conn.execute("SELECT name FROM kgrag.entity")}
    assert {"Ledger Service", "Payment Gateway"} <= names and max(len(name) for name in names) < 100


def test_a_common_word_capitalized_or_shouted_is_no_name(conn: psycopg.Connection, tmp_path: Path) -> None:
    """A manual's "Files" opening a sentence and a listing's FILE and REAL are words the same text
    writes in lowercase: not entities, so a question saying "files" or "real" does not seed a walk
    from them; the names it holds stay (Fortran, Lisbon), and so does an acronym it never lowercases."""
    text = (
        "Files are opened with OPEN. A REAL variable holds a real number; the FILE unit names the file.\n\n"
        "Fortran reads files in Lisbon and at NASA."
    )
    assert ingest(conn, tmp_path, [{"doc_id": "m", "text": text}], extractor=KeyphraseExtractor()).ok
    with tenant_transaction(conn, "t1"):
        names = {n for (n,) in conn.execute("SELECT name FROM kgrag.entity WHERE type = 'Name'").fetchall()}
    assert {"Fortran", "Lisbon", "NASA", "OPEN"} <= names, names
    assert not {"Files", "FILE", "REAL"} & names, names
