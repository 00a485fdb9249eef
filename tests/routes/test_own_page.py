"""The local route puts the seeds' own pages first: a question naming a subject that has a page of
its own in the collection (a document titled with its name) gets that page's answer chunk among
its first rows, in the seeds' order, at most half of them, even where the vector and lexical lists
prefer the many chunks about another subject the question names. Then, for each own page, the page
of one entity it names, the one nearest the question (a bridge page: the second step of a two-hop
question), the pinned rows at most (k + 1) / 2."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
from conftest import as_role
from ingesting import ingest

from pgkgrag.db.connections import READER, tenant_transaction
from pgkgrag.db.server import _BIN
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor, KnownName
from pgkgrag.retrieval.results import SearchResult
from pgkgrag.retrieval.search import run_search

QUESTION = "Which plant is larger, the Pterocarya or the Cotula?"
CROWD = {  # pages about other plants of the genus Cotula: the words of the question, again and again
    f"c{i}": (f"Cotula species {i}", f"Cotula species {i} is a small plant of the genus Cotula, larger than most.")
    for i in range(6)
}
PAGES = {
    "cotula": ("Cotula", "Cotula is a genus of small plants in the daisy family, found in the south."),
    "ptero": ("Pterocarya", "Pterocarya is a genus of trees known as wingnuts, up to 30 metres tall."),
    "notes": ("Field notes", "We saw Pterocarya trees by the river and Cotula by the path."),
}


def load(conn: psycopg.Connection, tmp_path: Path, pages: dict[str, tuple[str, str]]) -> HashEmbedder:
    docs = [{"doc_id": d, "title": title, "text": text} for d, (title, text) in (CROWD | pages).items()]
    names = [KnownName(title, "Plant") for title, _ in (CROWD | PAGES | pages).values() if title != "Field notes"]
    embedder = HashEmbedder(512)
    assert ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names), embedder=embedder).ok
    build(conn, "t1", embedder)
    return embedder


def search(conn: psycopg.Connection, embedder: HashEmbedder, route: str, k: int) -> SearchResult:
    return run_search(conn, "t1", embedder, QUESTION, route, k, {})


def test_the_named_subjects_pages_come_first(conn: psycopg.Connection, tmp_path: Path) -> None:
    embedder = load(conn, tmp_path, PAGES)
    vector = search(conn, embedder, "vector", 4)
    assert "ptero#0" not in vector.chunks()  # the fused lists alone leave the page out
    local = search(conn, embedder, "local", 4)
    assert local.chunks()[:2] == ["ptero#0", "cotula#0"]  # the seeds' order: the rarer name first
    first = [r for r in local.rows if r.kind == "chunk"][:2]
    assert [r.payload["ranks"]["own_page"] for r in first] == [1, 2] and {r.source for r in first} == {"graph"}
    assert len(local.chunks()) == 4 and "first the seeds' own pages" in local.reason
    others = [r for r in local.rows if r.kind == "chunk"][2:]
    assert all("own_page" not in r.payload["ranks"] for r in others)


def test_at_most_half_of_the_rows(conn: psycopg.Connection, tmp_path: Path) -> None:
    embedder = load(conn, tmp_path, PAGES)
    for k, pinned in ((1, 0), (2, 1), (3, 1), (5, 2)):
        rows = [r for r in search(conn, embedder, "local", k).rows if r.kind == "chunk"]
        assert len(rows) == k
        assert sum("own_page" in r.payload["ranks"] for r in rows) == pinned, k


def test_a_subject_without_a_page_of_its_own_is_not_pinned(conn: psycopg.Connection, tmp_path: Path) -> None:
    """Without the page titled Pterocarya, its answer comes from the field notes: that chunk is
    evidence like any other, not a page about it."""
    embedder = load(conn, tmp_path, {d: page for d, page in PAGES.items() if d != "ptero"})
    local = search(conn, embedder, "local", 4)
    ranks = {r.ref_id: r.payload["ranks"] for r in local.rows if r.kind == "chunk"}
    assert local.chunks()[0] == "cotula#0" and ranks["cotula#0"]["own_page"] == 1
    assert [c for c, r in ranks.items() if "own_page" in r] == ["cotula#0"]


def test_a_seed_the_question_does_not_name_word_for_word_is_not_pinned(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """A misspelt name still seeds the walk (a fuzzy link), but a guess does not take a row first."""
    embedder = load(conn, tmp_path, PAGES)
    local = run_search(conn, "t1", embedder, "Which plant is larger, the Pterocaria or the Cotula?", "local", 4, {})
    assert "Pterocarya" in local.reason  # linked, and a seed
    ranks = {r.ref_id: r.payload["ranks"] for r in local.rows if r.kind == "chunk"}
    assert [c for c, r in ranks.items() if "own_page" in r] == ["cotula#0"]


def test_a_common_word_that_titles_a_page_neither_seeds_nor_is_pinned(conn: psycopg.Connection, tmp_path: Path) -> None:
    """A page titled Time exists and "time" is a word of the question, but the question does not
    name it (lowercase, where the question capitalizes its names): it does not seed the walk, not
    even as a fuzzy guess from "whattime" or "timedoes", and its page does not take a row first."""
    embedder = load(
        conn, tmp_path, PAGES | {"time": ("Time", "Time is what a clock measures, and Time is a magazine.")}
    )
    local = run_search(conn, "t1", embedder, "What time does the Pterocarya flower?", "local", 4, {})
    assert "the question names Pterocarya:" in local.reason  # Pterocarya alone seeds the walk
    ranks = {r.ref_id: r.payload["ranks"] for r in local.rows if r.kind == "chunk"}
    assert [c for c, r in ranks.items() if "own_page" in r] == ["ptero#0"]


BRIDGE_QUESTION = "Kate Ramsay is a fictional character from an Australian soap opera created by whom?"
SOAP = {  # Kate's page names the soap opera and the suburb it is set in; characters crowd the lists
    "kate": ("Kate Ramsay", "Kate Ramsay is a fictional character from Neighbours, who lived in Erinsborough."),
    "neighbours": ("Neighbours", "Neighbours is an Australian television soap opera created by Reg Watson."),
    "erinsborough": ("Erinsborough", "Erinsborough is a suburb of Melbourne with a lake and a shopping centre."),
} | {
    f"char{i}": (f"Character {i}", f"Character {i} is a fictional character from an Australian soap opera.")
    for i in range(6)
}


def load_titled(conn: psycopg.Connection, tmp_path: Path, pages: dict[str, tuple[str, str]] = SOAP) -> HashEmbedder:
    """The pages given (SOAP by default), every title a name of the gazetteer."""
    docs = [{"doc_id": d, "title": title, "text": text} for d, (title, text) in pages.items()]
    names = [KnownName(title, "Thing") for title, _ in pages.values()]
    embedder = HashEmbedder(512)
    assert ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names), embedder=embedder).ok
    build(conn, "t1", embedder)
    return embedder


def pinned(result: SearchResult) -> list[tuple[str, str]]:
    return [
        (r.ref_id, key)
        for r in result.rows
        if r.kind == "chunk"
        for key in ("own_page", "bridge_page")
        if key in r.payload["ranks"]
    ]


def test_the_page_a_seeds_page_names_comes_next(conn: psycopg.Connection, tmp_path: Path) -> None:
    embedder = load_titled(conn, tmp_path)
    question, soap, suburb = embedder.embed([BRIDGE_QUESTION, SOAP["neighbours"][1], SOAP["erinsborough"][1]])
    assert float(question @ soap) > float(question @ suburb)  # the soap opera's page is the nearer of the two
    vector = run_search(conn, "t1", embedder, BRIDGE_QUESTION, "vector", 4, {})
    assert "neighbours#0" not in vector.chunks()  # the characters' pages crowd it out of the fused lists
    local = run_search(conn, "t1", embedder, BRIDGE_QUESTION, "local", 4, {})
    assert local.chunks()[:2] == ["kate#0", "neighbours#0"]
    assert pinned(local) == [("kate#0", "own_page"), ("neighbours#0", "bridge_page")]
    bridge = next(r for r in local.rows if r.ref_id == "neighbours#0")
    assert bridge.payload["ranks"]["bridge_page"] == 1 and bridge.source != "bridge_page"
    assert "first the seeds' own pages (documents titled with their names), then the page each names" in local.reason


def test_an_analyst_in_psql_gets_the_same_pinned_pages_as_a_reader(
    conn: psycopg.Connection, tmp_path: Path, dsn: str, login_roles: Callable[[str], str]
) -> None:
    """The same search from psql, as a login role granted kgrag_reader for the tenant, the question's
    vector passed as a psql variable: the own page, then the bridge page, as through the driver."""
    embedder = load_titled(conn, tmp_path)
    role = login_roles(READER)
    with psycopg.connect(dsn, autocommit=True) as owner:
        owner.execute("SELECT kgrag.grant_tenant(%s, 't1')", [role])
    (vec,) = embedder.embed([BRIDGE_QUESTION])
    script = (
        "BEGIN;\nSELECT kgrag.use_tenant('t1');\n"
        "SELECT ref_id, (SELECT string_agg(key, ',' ORDER BY key) FROM jsonb_object_keys(payload -> 'ranks') AS key"
        " WHERE key IN ('own_page', 'bridge_page'))"
        " FROM kgrag.kgrag_search(question_vec => :'qvec'::vector, route => 'local', question => :'q', k => 4)"
        " WHERE kind = 'chunk' ORDER BY rank;\nCOMMIT;\n"
    )
    variables = ["-v", "ON_ERROR_STOP=1", "-v", f"q={BRIDGE_QUESTION}", "-v", f"qvec=[{','.join(map(str, vec))}]"]
    out = subprocess.run(
        [str(_BIN / "psql"), "-X", "-A", "-t", "-q", *variables, as_role(dsn, role)],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if "|" in line]
    assert rows[:2] == ["kate#0|own_page", "neighbours#0|bridge_page"], out.stdout
    assert len(rows) == 4 and not any(r.endswith("page") for r in rows[2:])


def test_bridge_pages_share_half_of_the_rows_with_the_own_pages(conn: psycopg.Connection, tmp_path: Path) -> None:
    embedder = load_titled(conn, tmp_path)
    expected = {1: [], 2: [("kate#0", "own_page")], 3: [("kate#0", "own_page"), ("neighbours#0", "bridge_page")]}
    for k, rows in expected.items():
        assert pinned(run_search(conn, "t1", embedder, BRIDGE_QUESTION, "local", k, {})) == rows, k


def test_a_filtered_walk_or_a_question_without_a_vector_gets_no_bridge_page(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """A bridge page follows what the page names, not the graph's edges: a walk the caller limits to
    some relations, or to a time, gets none; nor does a search by the text alone (nothing to rank
    the named pages by)."""
    embedder = load_titled(conn, tmp_path)
    for options in ({"relations": ["CO_OCCURS"]}, {"as_of": "2020-01-01T00:00:00Z"}):
        result = run_search(conn, "t1", embedder, BRIDGE_QUESTION, "local", 4, options)
        assert pinned(result) == [("kate#0", "own_page")], options
    with tenant_transaction(conn, "t1"):
        rows = conn.execute(
            "SELECT ref_id, payload -> 'ranks' FROM kgrag.kgrag_search(question => %s, route => 'local', k => 4)"
            " WHERE kind = 'chunk'",
            [BRIDGE_QUESTION],
        ).fetchall()
    assert [r[0] for r in rows if "own_page" in r[1]] == ["kate#0"]
    assert not any("bridge_page" in r[1] for r in rows)


def test_a_page_titled_with_the_name_and_a_qualifier_is_its_own_page(conn: psycopg.Connection, tmp_path: Path) -> None:
    """A page titled "Pterocarya (tree)" is the page about Pterocarya: a trailing parenthesis qualifies a title
    (the convention of wikis), so an extractor that finds the bare name still gets the page first."""
    pages = PAGES | {"ptero": ("Pterocarya (tree)", PAGES["ptero"][1])}
    docs = [{"doc_id": d, "title": title, "text": text} for d, (title, text) in (CROWD | pages).items()]
    names = [KnownName(title, "Plant") for title, _ in CROWD.values()] + [
        KnownName("Cotula", "Plant"),
        KnownName("Pterocarya", "Plant"),
    ]
    embedder = HashEmbedder(512)
    assert ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names), embedder=embedder).ok
    build(conn, "t1", embedder)
    local = search(conn, embedder, "local", 4)
    assert local.chunks()[:2] == ["ptero#0", "cotula#0"]
    assert pinned(local) == [("ptero#0", "own_page"), ("cotula#0", "own_page")]


TORNADO_QUESTION = "The first tornado of the spring outbreak hit a state named after which tribe?"
OUTBREAK = {  # the question names no page; the nearest chunk, the outbreak's page, names the state
    "outbreak": ("Spring 1998 outbreak", "The first tornado of the spring outbreak hit South Dakota near Lake Andes."),
    "dakota": ("South Dakota", "South Dakota is a state named after the Dakota tribe of the Sioux."),
    "andes": ("Lake Andes", "Lake Andes is a small town on a lake, with a harbour and a school."),
} | {
    f"storm{i}": (f"Storm {i}", f"Storm {i} was a tornado that hit a state in spring, the first of the season.")
    for i in range(6)
}


def test_a_question_naming_no_page_gets_the_page_its_nearest_chunk_names(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """No own page: the bridge starts from the chunk nearest the question, which names two pages;
    the one nearer the question is pinned first, and the nearest chunk keeps its place by RRF."""
    embedder = load_titled(conn, tmp_path, OUTBREAK)
    question, state, town = embedder.embed([TORNADO_QUESTION, OUTBREAK["dakota"][1], OUTBREAK["andes"][1]])
    assert float(question @ state) > float(question @ town)
    vector = run_search(conn, "t1", embedder, TORNADO_QUESTION, "vector", 4, {})
    assert vector.chunks()[0] == "outbreak#0" and "dakota#0" not in vector.chunks()
    local = run_search(conn, "t1", embedder, TORNADO_QUESTION, "local", 4, {})
    assert pinned(local) == [("dakota#0", "bridge_page")]
    assert local.chunks()[:2] == ["dakota#0", "outbreak#0"]
    assert "first the page the nearest chunk names nearest the question" in local.reason
    assert pinned(run_search(conn, "t1", embedder, TORNADO_QUESTION, "local", 1, {})) == []  # k = 1: the nearest chunk
