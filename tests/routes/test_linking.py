"""Entity linking: the spellings of seed 001 (spaces, prepositions, word order, accents, typos)."""

from __future__ import annotations

import psycopg
import pytest
from corpus import add_chunks, add_entity

from pgkgrag.db.connections import READER, connect, tenant_transaction


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


def test_names_alike_by_the_dozen_are_ambiguous_and_read_no_further(tconn: psycopg.Connection) -> None:
    """A span close to many names (a number off by one digit) links none of them, as before the
    probe stopped early; the probe returns the aliases of at most three entities, not all twelve;
    a span close to one name still links it."""
    for n in range(12):
        add_entity(tconn, "t1", "Team", f"Team 0228{n:x}")
    add_entity(tconn, "t1", "Team", "Team Zanzibar")
    assert link(tconn, "team 0228g") == []
    (entities,) = tconn.execute(
        "SELECT count(DISTINCT entity_id) FROM kgrag_private.fuzzy_aliases('team0228g', 0.5, 0.5, 2)"
    ).fetchone()  # type: ignore[misc]
    assert entities == 3
    assert link(tconn, "who is in team zanzibr?") == [("team:team zanzibar", "trigram")]


@pytest.mark.parametrize("question", ["", "   ", "?!?", "the of and"])
def test_nothing_to_link(linked: psycopg.Connection, question: str) -> None:
    assert link(linked, question) == []


def test_isolated_entities_can_be_asked_for(linked: psycopg.Connection) -> None:
    rows = linked.execute("SELECT entity_id, tier FROM kgrag.link_entities('Forgotten Box', include_isolated => true)")
    assert rows.fetchall() == [("infra:forgotten box", "exact")]


KEPT = """
    SELECT f, a, probe, pieces, grams_a,
           COALESCE(shared::float8 / NULLIF(cardinality(grams_a) + cardinality(grams_f) - shared, 0), 0) AS jaccard
      FROM (SELECT u.f, u.a,
                   kgrag_private.probe_trigrams(u.f, %(t)s, %(common)s::text[], %(frequency)s::real[]) AS probe,
                   kgrag_private.alias_pieces(u.f, %(r)s) AS pieces,
                   kgrag.trigrams(u.a) AS grams_a, kgrag.trigrams(u.f) AS grams_f,
                   (SELECT count(*) FROM unnest(kgrag.trigrams(u.a)) AS g WHERE g = ANY (kgrag.trigrams(u.f))) AS shared
              FROM unnest(%(forms)s::text[], %(aliases)s::text[]) AS u(f, a)) AS x
"""


@pytest.mark.slow
@pytest.mark.parametrize(("min_trigram", "min_ratio"), [(0.5, 0.5), (0.3, 0.7), (0.8, 0.2), (0, 0)])
@pytest.mark.parametrize("statistics", ["none", "random"])
def test_the_probes_meet_every_alias_a_weak_tier_keeps(
    conn: psycopg.Connection, min_trigram: float, min_ratio: float, statistics: str
) -> None:
    """kgrag_private.probe_trigrams may leave trigrams out of the index probe, and pick the rarest
    by the statistics it is given, only where no alias the weak tiers keep could be missed, the
    aliases inside the span being kgrag_private.alias_pieces: checked on random spans and aliases
    (typos, repeats, digits, inner and outer pieces of the span), without statistics and with
    random ones."""
    import random

    rng = random.Random(int(min_trigram * 10 + min_ratio * 100))
    alphabet = "aab0123xyz"
    common: list[str] = []
    frequency: list[float] = []
    if statistics == "random":  # any trigram of the alphabet may be listed, with any share
        grams = sorted({"".join(rng.choice(alphabet + " ") for _ in range(3)) for _ in range(400)})
        common = rng.sample(grams, len(grams) // 2)
        frequency = [rng.random() for _ in common]
    forms, aliases = [], []
    for _ in range(3000):
        form = "".join(rng.choice(alphabet) for _ in range(rng.randint(4, 18)))
        kind = rng.randrange(4)
        if kind == 0:  # a piece of the span
            i = rng.randrange(len(form) - 3)
            alias = form[i : rng.randint(i + 4, len(form))]
        elif kind == 1:  # the span inside a longer name
            alias = "".join(rng.choice("ab0") for _ in range(rng.randint(0, 6))) + form + "z" * rng.randint(0, 3)
        elif kind == 2:  # typos
            chars = list(form)
            for _ in range(rng.randint(1, 3)):
                chars[rng.randrange(len(chars))] = rng.choice("ab0q")
            alias = "".join(chars)
        else:
            alias = "".join(rng.choice(alphabet) for _ in range(rng.randint(4, 18)))
        forms.append(form)
        aliases.append(alias)
    kept = checked = 0
    for f, a, probe, pieces, grams_a, jaccard in conn.execute(
        KEPT,
        {"t": min_trigram, "r": min_ratio, "forms": forms, "aliases": aliases}
        | {"common": common, "frequency": frequency},
    ):
        contained = min(len(a), len(f)) / max(len(a), len(f)) if len(a) >= 4 and (a in f or f in a) else 0.0
        # what a probe with every trigram of the span finds (one shared) and the tiers keep, within
        # kgrag_private.fuzzy_aliases' length filter (half to twice the span)
        if len(f) // 2 <= len(a) <= 2 * len(f) and jaccard > 0 and (contained >= min_ratio or jaccard >= min_trigram):
            kept += 1
            found = bool(set(grams_a) & set(probe)) or a in pieces
            assert found, (f, a, probe, pieces)
        checked += 1
    assert checked == 3000 and kept > 1000


def test_a_probe_reads_the_rarest_trigrams(conn: psycopg.Connection) -> None:
    """With statistics, the Jaccard part of the probe is the rarest trigrams of the span: a common
    trigram is left out where enough rare ones meet the bound."""
    row = conn.execute(
        "SELECT kgrag_private.probe_trigrams('teamzq', 0.5, %s::text[], %s::real[]),"
        " kgrag_private.probe_trigrams('teamzq', 0.5)",
        [["tea", "eam", "  t", " te", "amz"], [0.9, 0.8, 0.7, 0.6, 0.5]],
    ).fetchone()
    assert row is not None
    with_stats, without = row
    assert "tea" not in with_stats and "eam" not in with_stats and {"mzq", "zq "} <= set(with_stats)
    assert "tea" in without  # the trigrams inside the word first, when nothing says which are common


def test_a_tenants_commonest_name_trigrams_are_counted_for_its_probes(tconn: psycopg.Connection, dsn: str) -> None:
    """kgrag.refresh_alias_trigram_stats (pgkgrag build) counts the tenant's commonest name
    trigrams where its own roles can read them (pg_stats hides them from any role row-level
    security applies to); the probe then leaves out "ter", which all 31 of the tenant's names hold
    ("Cluster ..." and "Painter Hub"); another tenant sees nothing of them."""
    for n in range(30):
        add_entity(tconn, "t1", "Infra", f"Cluster {n:02d}")
    add_entity(tconn, "t1", "Service", "Painter Hub")
    add_entity(tconn, "t2", "Service", "Painter Hub")
    tconn.use("t1")
    (counted,) = tconn.execute("SELECT kgrag.refresh_alias_trigram_stats()").fetchone()  # type: ignore[misc]
    assert counted > 0
    with connect(dsn, role=READER) as reader, tenant_transaction(reader, "t1"):
        common, frequency = reader.execute("SELECT common, frequency FROM kgrag.alias_trigram_stats").fetchone()  # type: ignore[misc]
        assert len(common) == len(frequency) == counted
        # every one of the tenant's 31 names holds "ter" (Painter too), 30 hold "clu"
        assert frequency[common.index("ter")] == pytest.approx(1.0)
        assert frequency[common.index("clu")] == pytest.approx(30 / 31)
        assert frequency == sorted(frequency, reverse=True)
        with_stats, without = reader.execute(
            "SELECT kgrag_private.probe_trigrams('painter', 0.5, s.common, s.frequency),"
            " kgrag_private.probe_trigrams('painter', 0.5) FROM kgrag.alias_trigram_stats AS s"
        ).fetchone()  # type: ignore[misc]
        assert "ter" in without and "ter" not in with_stats
    with connect(dsn, role=READER) as reader, tenant_transaction(reader, "t2"):
        assert reader.execute("SELECT count(*) FROM kgrag.alias_trigram_stats").fetchone() == (0,)
    # counted again from what the names are now: the same row, not a second one
    tconn.use("t1")
    assert tconn.execute("SELECT kgrag.refresh_alias_trigram_stats()").fetchone() == (counted,)
    assert link(tconn, "who owns the painter hub?") == [("service:painter hub", "phrase")]


def test_among_links_alike_a_proper_name_then_the_rarer_entity_seeds_first(tconn: psycopg.Connection) -> None:
    """Three phrase links and one seed: the proper name before the common phrase (whose key sorts
    first), and of two proper names the one fewer chunks cite."""
    add_chunks(tconn, "t1", {f"d{i}": f"note {i}" for i in range(4)})
    cited = {"soap opera": ["d0"], "Kate Ramsay": ["d0", "d1", "d2"], "Ashleigh Brewer": ["d0", "d3"]}
    for name, docs in cited.items():
        entity = add_entity(tconn, "t1", "Concept" if name.islower() else "Name", name)
        for doc in docs:
            tconn.execute(
                "INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id) VALUES ('t1', %s, %s)", [entity, f"{doc}#0"]
            )

    def seeds(question: str) -> list[str]:
        return tconn.execute("SELECT seeds FROM kgrag.route(NULL, %s, %s)", [question, '{"seeds": 3}']).fetchone()[0]

    assert seeds("the soap opera where Kate Ramsay met Ashleigh Brewer") == [
        "name:ashleigh brewer",  # cited by 2 chunks
        "name:kate ramsay",  # by 3
        "concept:soap opera",  # a common phrase, though its key sorts first and 1 chunk cites it
    ]


def test_the_longest_match_wins(tconn: psycopg.Connection) -> None:
    """A name inside a longer name the question holds is part of it; apart, it links."""
    add_entity(tconn, "t1", "Show", "Thumb Wrestling Federation")
    add_entity(tconn, "t1", "Org", "Wrestling Federation")
    add_entity(tconn, "t1", "Org", "Federation")
    add_entity(tconn, "t1", "Network", "Cartoon Network")
    assert link(tconn, "Thumb Wrestling Federation is on which channel?") == [
        ("show:thumb wrestling federation", "phrase")
    ]
    assert link(tconn, "Is the Wrestling Federation on Cartoon Network?") == [
        ("network:cartoon network", "phrase"),
        ("org:wrestling federation", "phrase"),
    ]


@pytest.mark.parametrize(
    ("question", "linked"),
    [
        ("Who starred in Taken?", ["film:taken"]),
        ("When was Hong Kong taken by the British?", []),  # the word, not the film
        ("when was hong kong taken by the british", ["film:taken"]),  # no capitals: no case to read
        ("Is auth down again, Bob?", ["service:auth"]),  # an alias written in lower case
    ],
)
def test_a_capitalized_one_word_name_needs_a_capital(
    tconn: psycopg.Connection, question: str, linked: list[str]
) -> None:
    add_entity(tconn, "t1", "Film", "Taken")
    add_entity(tconn, "t1", "Service", "auth")
    assert [e for e, tier in link(tconn, question) if tier == "token"] == linked


def test_a_long_title_links_as_a_phrase(tconn: psycopg.Connection) -> None:
    """Names of seven to twelve words (films, books, agreements) are phrases too; a span of six
    words at most used to be read, so they never linked."""
    add_entity(tconn, "t1", "Film", "The Girl Who Kicked the Hornets' Nest")
    add_entity(tconn, "t1", "Book", "Alexander and the Terrible, Horrible, No Good, Very Bad Day")
    long = "Master Services Agreement between Acme Corporation Limited and Payflow Payments Ltd of March 2021"
    add_entity(tconn, "t1", "Contract", long)
    assert link(tconn, "Who directed The Girl Who Kicked the Hornets' Nest?") == [
        ("film:the girl who kicked the hornets nest", "phrase")
    ]
    assert link(tconn, "the author of alexander and the terrible horrible no good very bad day") == [
        ("book:alexander and the terrible horrible no good very bad day", "phrase")
    ]
    # fourteen words: longer than any span read, so it does not link as a phrase
    assert [tier for _, tier in link(tconn, f"Who signed the {long}?")] != ["phrase"]


def test_a_name_the_case_rule_refuses_is_not_linked_by_a_guess_either(tconn: psycopg.Connection) -> None:
    """An extractor's sentence-start name "Directed" is refused as a token of "Who directed the
    film?"; the fuzzy tiers, which hold the word alone or inside "whodirected", refuse it too."""
    add_entity(tconn, "t1", "Name", "Directed")
    add_entity(tconn, "t1", "Film", "Leland Story")
    assert link(tconn, "Who directed the Leland Story?") == [("film:leland story", "phrase")]
    assert link(tconn, "Directed by whom, the Leland Story?")[:2] == [
        ("film:leland story", "phrase"),
        ("name:directed", "token"),
    ]
    assert ("name:directed", "token") in link(tconn, "who directed the leland story")  # no capitals: no case


def test_the_case_rule_reads_names_and_texts_as_written(tconn: psycopg.Connection) -> None:
    """kgrag.is_cased_name (which names fall under the case rule) and kgrag.capitalized_words (which
    words a text capitalizes), the two halves linking and the gazetteer both read."""
    names = ["Time", "TIME", "iPhone", "12Stone", "time", "Payment Module", "são paulo", "Ética"]
    cased = tconn.execute("SELECT n, kgrag.is_cased_name(n) FROM unnest(%s::text[]) AS n", [names]).fetchall()
    assert [n for n, c in cased if c] == ["Time", "TIME", "iPhone", "12Stone", "Ética"]
    (words,) = tconn.execute(
        "SELECT kgrag.capitalized_words('It took a long time; TIME, 12Stone and the iPhone. Ética e ação')"
    ).fetchone()  # type: ignore[misc]
    assert words == ["12stone", "etica", "iphone", "it", "time"]
    assert tconn.execute("SELECT kgrag.capitalized_words('nothing capitalized here')").fetchone() == ([],)
