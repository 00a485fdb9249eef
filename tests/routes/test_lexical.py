"""Full-text search: accents folded, languages, websearch syntax, and no error on any input."""

from __future__ import annotations

import psycopg
import pytest
from corpus import add_chunks
from tenant_session import TenantSession


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


def test_each_language_of_the_tenant_is_searched_in_its_own_configuration(lexical: psycopg.Connection) -> None:
    """With four languages in the tenant (found by one index probe each since revision 0029, which
    this test does not check), each chunk is matched by its own stemmer; another tenant's German
    chunk is not found."""
    add_chunks(lexical, "t1", {"vertrag": "Die Verträge werden jährlich erneuert."}, lang="german")
    add_chunks(lexical, "t1", {"renovacion": "Las renovaciones del contrato son anuales."}, lang="spanish")
    add_chunks(lexical, "t2", {"andere": "Andere Verträge."}, lang="german")
    assert search(lexical, "Vertrag") == ["vertrag#0"]  # German stemming: Verträge -> vertrag
    assert search(lexical, "renovación") == ["renovacion#0"]  # Spanish: renovaciones -> renov
    assert search(lexical, "renovações") == ["renovacao#0"]
    assert search(lexical, "contract renewal consent")[0] == "renewal#0"


def test_configuration_can_be_forced(lexical: psycopg.Connection) -> None:
    assert search(lexical, "renovação", 10, "any", "simple") == []  # no simple-config chunks
    assert search(lexical, "renovação", 10, "any", "portuguese") == ["renovacao#0"]


def test_bad_arguments_are_named(lexical: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="k must be between 1 and 1000, got -1"):
        search(lexical, "contract", -1)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="lexical mode must be"):
        search(lexical, "contract", 10, "fuzzy")


EXHAUSTIVE = """
    SELECT c.chunk_id FROM kgrag.chunk AS c
     WHERE c.tsv @@ kgrag.lexical_query(%(q)s, 'english')
       AND kgrag_private.coverage(c.tsv, kgrag_private.question_words(%(q)s, 'english')) >= %(cov)s
     ORDER BY ts_rank_cd(c.tsv, kgrag.lexical_query(%(q)s, 'english')) DESC, c.chunk_id
     LIMIT 10
"""


@pytest.fixture
def common_words(tconn: psycopg.Connection) -> psycopg.Connection:
    """300 chunks sharing 'weekly operations review', a few more words each, and three that
    also name the rare 'zephyr' (seeded, so the same corpus every run)."""
    import random

    rng = random.Random(5)
    extra = ["cluster", "billing", "incident", "deploy", "latency", "outage", "upgrade", "backup"]
    texts = {
        f"ops{i:03d}": "The weekly operations review of cycle "
        + str(i)
        + " covers "
        + " and ".join(rng.sample(extra, rng.randint(1, 4)))
        + ("; the zephyr rollout slipped." if i in (17, 150, 299) else ".")
        for i in range(300)
    }
    add_chunks(tconn, "t1", texts)
    return tconn


QUESTIONS = [
    "weekly operations review zephyr",
    "zephyr",
    "weekly review of billing latency",
    "operations outage and backup during the upgrade",
    "weekly operations review",
]


def test_with_every_match_a_candidate_the_ranking_is_exhaustive(common_words: psycopg.Connection) -> None:
    for question in QUESTIONS:
        for coverage in (0, 0.5):
            got = search(common_words, question, 10, "any", None, coverage)
            assert got == [r[0] for r in common_words.execute(EXHAUSTIVE, {"q": question, "cov": coverage})], question


def test_the_candidates_are_bounded_and_the_rare_terms_come_first(common_words: psycopg.Connection) -> None:
    common_words.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'lexical_candidates', '20')")
    for question in QUESTIONS:
        (n,) = common_words.execute(
            "SELECT count(*) FROM kgrag_private.lexical_candidates(%s, 'english', 'any', 20)", [question]
        ).fetchone()  # type: ignore[misc]
        assert n <= 20, question
    # the three chunks holding the rare word are scored, and rank first, as they do unbounded
    got = search(common_words, "weekly operations review zephyr", 3, "any", None, 0.5)
    assert sorted(got) == ["ops017#0", "ops150#0", "ops299#0"]
    exhaustive = [r[0] for r in common_words.execute(EXHAUSTIVE, {"q": "weekly operations review zephyr", "cov": 0.5})]
    assert got == exhaustive[:3]
    # every word in more than 20 chunks: none draws candidates (unbounded, all 300 would be scored)
    assert search(common_words, "weekly review of billing latency", 10, "any", None, 0.5) == []
    assert common_words.execute(EXHAUSTIVE, {"q": "weekly review of billing latency", "cov": 0.5}).fetchall()


def test_the_common_words_are_counted_once_by_the_build_step(common_words: psycopg.Connection) -> None:
    common_words.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'lexical_candidates', '20')")
    before = {q: search(common_words, q, 10, "any", None, 0.5) for q in QUESTIONS}
    (stored,) = common_words.execute("SELECT kgrag.refresh_lexeme_stats()").fetchone()  # type: ignore[misc]
    counted = common_words.execute("SELECT lexeme, chunks FROM kgrag.lexeme_stats ORDER BY lexeme").fetchall()
    expected = common_words.execute(
        "SELECT u.lexeme, count(*) FROM kgrag.chunk AS c CROSS JOIN LATERAL unnest(c.tsv) AS u"
        " GROUP BY u.lexeme HAVING count(*) > 20 ORDER BY u.lexeme"
    ).fetchall()
    assert stored == len(counted) == len(expected) and counted == expected
    assert ("week", 300) in counted and "zephyr" not in dict(counted)
    # the counts only spare reading the common words' index lists: the same answers
    assert {q: search(common_words, q, 10, "any", None, 0.5) for q in QUESTIONS} == before
    # a word the table calls common draws nothing, whatever the index holds: the index is not read
    common_words.execute(
        "INSERT INTO kgrag.lexeme_stats (tenant_id, lang, lexeme, chunks) VALUES ('t1', 'english', 'zephyr', 999)"
    )
    assert search(common_words, "zephyr", 10) == []
    common_words.execute("SELECT kgrag.refresh_lexeme_stats()")  # recounted: zephyr is rare again
    assert len(search(common_words, "zephyr", 10)) == 3


def test_the_partly_drawn_term_draws_the_same_chunks_whatever_the_storage_order(tconn: TenantSession) -> None:
    """With room for one more candidate, the next rarest term's chunks are drawn by chunk id, not in
    storage order: the same documents stored in the opposite order give the same answer (a Citus
    shard and a single node store a tenant's rows in different orders)."""
    texts = {"zz": "The quasar alpha report.", "aa": "The quasar beta report.", "mm": "The zephyr gamma note."}
    add_chunks(tconn, "t1", texts)
    add_chunks(tconn, "t2", dict(reversed(texts.items())))
    got = {}
    for tenant in ("t1", "t2"):
        tconn.use(tenant)
        tconn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'lexical_candidates', '2')", [tenant]
        )
        # zephyr (1 chunk) is drawn whole; quasar (2 chunks) fills the one place left
        got[tenant] = search(tconn, "zephyr quasar", 10)
    assert got["t1"] == got["t2"] == ["aa#0", "mm#0"]  # equal scores: by chunk id
