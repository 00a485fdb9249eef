"""Full-text search: accents folded, languages, websearch syntax, and no error on any input."""

from __future__ import annotations

import psycopg
import pytest
from corpus import add_chunks


@pytest.fixture
def lexical(tconn: psycopg.Connection) -> psycopg.Connection:
    add_chunks(
        tconn,
        "t1",
        {
            "renewal": "The renewal of the contract needs explicit consent from both parties.",
            "billing": "Invoices are issued after the billing cycle closes; the contract sets the cut-off day.",
            "backup": "Backups run outside business hours and require two-factor authentication.",
        },
    )
    add_chunks(
        tconn,
        "t1",
        {
            "renovacao": "A renovação automática do contrato vale quando não há recusa no prazo.",
            "autenticacao": "O serviço de autenticação delega a gestão de sessões ao time de identidade.",
        },
        lang="portuguese",
    )
    add_chunks(tconn, "t2", {"other": "The renewal of the contract of another tenant."})
    return tconn


def search(conn: psycopg.Connection, question: str, *args: object) -> list[str]:
    params = "".join(", %s" for _ in args)
    rows = conn.execute(f"SELECT chunk_id FROM kgrag.search_chunks_lexical(%s{params})", [question, *args])
    return [r[0] for r in rows.fetchall()]


def test_ranks_by_content_words(lexical: psycopg.Connection) -> None:
    rows = lexical.execute("SELECT * FROM kgrag.search_chunks_lexical('contract renewal consent')").fetchall()
    assert [r[0] for r in rows] == ["renewal#0", "billing#0"]
    assert [r[1] for r in rows] == [1, 2]
    assert rows[0][2] > rows[1][2] > 0


def test_accents_are_folded_both_ways(lexical: psycopg.Connection) -> None:
    assert search(lexical, "renovacao automatica") == ["renovacao#0"]
    assert search(lexical, "serviço de AUTENTICAÇÃO") == ["autenticacao#0"]
    # Portuguese stemming: "renovações" meets "renovação"
    assert search(lexical, "renovações") == ["renovacao#0"]


def test_websearch_mode_requires_every_word_and_honours_syntax(lexical: psycopg.Connection) -> None:
    assert search(lexical, "contract consent", 10, "websearch") == ["renewal#0"]
    assert search(lexical, '"billing cycle" -backup', 10, "websearch") == ["billing#0"]
    assert search(lexical, "backups or invoices", 10, "websearch") == ["backup#0", "billing#0"]


@pytest.mark.parametrize(
    "question",
    [
        "",
        "   ",
        "?!",
        "'",
        '"',
        "a & b | !c",
        "(((",
        "contract'); DROP TABLE kgrag.chunk; --",
        ":*",
        "\\",
        "<->",
        "the of and",
    ],
)
def test_never_fails_on_user_punctuation(lexical: psycopg.Connection, question: str) -> None:
    for mode in ("any", "websearch"):
        lexical.execute("SELECT * FROM kgrag.search_chunks_lexical(%s, 5, %s)", [question, mode]).fetchall()
    assert lexical.execute("SELECT count(*) FROM kgrag.chunk").fetchone() == (5,)  # t1's, t2's are invisible


def test_empty_questions_return_nothing(lexical: psycopg.Connection) -> None:
    assert search(lexical, "") == []
    assert search(lexical, "the of and") == []


def test_other_tenants_rows_never_match(lexical: psycopg.Connection) -> None:
    assert "other#0" not in search(lexical, "renewal contract tenant")


def test_configuration_can_be_forced(lexical: psycopg.Connection) -> None:
    assert search(lexical, "renovação", 10, "any", "simple") == []  # no simple-config chunks
    assert search(lexical, "renovação", 10, "any", "portuguese") == ["renovacao#0"]


def test_bad_arguments_are_named(lexical: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="k must be between 1 and 1000, got -1"):
        search(lexical, "contract", -1)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="lexical mode must be"):
        search(lexical, "contract", 10, "fuzzy")
