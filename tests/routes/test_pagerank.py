"""kgrag.personalized_pagerank against igraph's exact personalized_pagerank on generated graphs.

Each graph is random (seeded): entities with weighted edges (co-occurrences stored both ways,
typed edges one way, some pairs with both; five core entities linked to all, so the graph is
within 3 edges of any seed), chunks citing one to four entities, a few chunks citing none. With
hops = 4 the SQL's subgraph is the whole graph, so its masses must match igraph's to the
iteration's tolerance; the ranking checks (top-10 overlap, Spearman correlation) are written with
the tolerance a ranking user cares about.
"""

from __future__ import annotations

import random

import igraph
import psycopg
import pytest
from conftest import DEMO_TENANT
from psycopg.types.json import Jsonb
from tenant_session import TenantSession

from pgkgrag.db.connections import READER, connect, tenant_transaction
from pgkgrag.embed.embedders import Embedder

SEEDS = [3, 11, 29, 47]


Edges = list[tuple[str, str, str, float]]


def _graph(rng: random.Random, entities: int, chunks: int) -> tuple[Edges, dict[str, list[str]]]:
    names = [f"e{i:03d}" for i in range(entities)]
    core = names[:5]  # linked to each other and to every other entity: any entity is within 3 edges of any
    pairs = [(a, b) for i, a in enumerate(core) for b in core[i + 1 :]]
    pairs += [(a, rng.choice(core)) for a in names[5:]] + [tuple(rng.sample(names, 2)) for _ in range(entities)]
    edges: dict[tuple[str, str, str], float] = {}
    for a, b in pairs:
        if rng.random() < 0.6:
            w = float(rng.randint(1, 5))
            edges[(a, b, "CO_OCCURS")] = w
            edges[(b, a, "CO_OCCURS")] = w
        else:
            edges[(a, b, rng.choice(["DEPENDS_ON", "OWNS"]))] = round(rng.uniform(0.2, 3.0), 3)
    cites = {f"d{i:03d}#0": rng.sample(names, rng.randint(1, 4)) for i in range(chunks)}
    cites.update({f"x{i:03d}#0": [] for i in range(3)})  # chunks citing no entity
    return [(s, d, r, w) for (s, d, r), w in sorted(edges.items())], cites


def _load(conn: psycopg.Connection, edges: Edges, cites: dict[str, list[str]]) -> None:
    names = sorted({x for s, d, _, _ in edges for x in (s, d)} | {e for es in cites.values() for e in es})
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES ('t1', %s, %s, 'n')",
            [(x, x) for x in names],
        )
        cur.executemany(
            "INSERT INTO kgrag.alias (tenant_id, entity_id, alias) VALUES ('t1', %s, %s)",
            [(x, f"Entity {x[1:]}") for x in names],
        )
        cur.executemany(
            "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight) VALUES ('t1', %s, %s, %s, %s)", edges
        )
        for chunk, entities in cites.items():
            doc = chunk.split("#")[0]
            cur.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t1', %s, 'h')", [doc])
            cur.execute(
                "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text,"
                " content_hash) VALUES ('t1', %s, %s, 0, 0, 1, 'x', 'h')",
                [chunk, doc],
            )
            cur.executemany(
                "INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id) VALUES ('t1', %s, %s)",
                [(e, chunk) for e in entities],
            )


def _igraph_masses(
    edges: Edges, cites: dict[str, list[str]], reset: dict[str, float], damping: float
) -> dict[str, float]:
    """The same graph as the SQL describes it (one undirected link per pair: every relation type
    summed, a co-occurrence stored both ways counted once; entity-chunk links of weight 1)."""
    pair: dict[tuple[str, str, str], float] = {}
    for s, d, r, w in edges:
        key = (min(s, d), max(s, d), r)
        pair[key] = max(pair.get(key, 0.0), w)
    links: dict[tuple[str, str], float] = {}
    for (a, b, _), w in pair.items():
        links[("e" + a, "e" + b)] = links.get(("e" + a, "e" + b), 0.0) + w
    for chunk, entities in cites.items():
        for e in entities:
            links[("e" + e, "c" + chunk)] = 1.0
    nodes = sorted({x for link in links for x in link} | {"c" + c for c in cites} | set(reset))
    index = {x: i for i, x in enumerate(nodes)}
    g = igraph.Graph(n=len(nodes), edges=[(index[a], index[b]) for a, b in links], directed=False)
    g.es["weight"] = list(links.values())
    total = sum(reset.values())
    masses = g.personalized_pagerank(
        directed=False, damping=damping, reset=[reset.get(x, 0.0) / total for x in nodes], weights="weight"
    )
    return dict(zip(nodes, masses, strict=True))


def _spearman(a: list[str], b: list[str]) -> float:
    rank_b = {x: i for i, x in enumerate(b)}
    n = len(a)
    return 1 - 6 * sum((i - rank_b[x]) ** 2 for i, x in enumerate(a)) / (n * (n * n - 1))


@pytest.mark.parametrize("seed", SEEDS)
def test_masses_match_igraph_on_random_graphs(tconn: TenantSession, seed: int) -> None:
    rng = random.Random(seed)
    edges, cites = _graph(rng, entities=rng.randint(20, 60), chunks=rng.randint(30, 90))
    entity_seeds = sorted(rng.sample(sorted({s for s, _, _, _ in edges}), 3))
    chunk_seeds = sorted(rng.sample(sorted(cites), 4))
    chunk_weights = [round(rng.uniform(0.01, 0.05), 4) for _ in chunk_seeds]
    damping = rng.choice([0.5, 0.85])
    with tconn.acting() as conn:
        _load(conn, edges, cites)
    with tconn.acting() as conn:
        rows = conn.execute(
            "SELECT kind, node_id, mass, rank FROM kgrag.personalized_pagerank(%s, NULL, %s, %s, damping => %s,"
            " hops => 4)",
            [entity_seeds, chunk_seeds, chunk_weights, damping],
        ).fetchall()
        citing = dict(
            conn.execute(
                "SELECT entity_id, count(*) FROM kgrag.mention WHERE entity_id = ANY (%s) GROUP BY 1", [entity_seeds]
            ).fetchall()
        )
    # the default seed weight: 1 / the chunks citing the entity
    reset = {"e" + e: 1.0 / max(1, citing.get(e, 0)) for e in entity_seeds}
    reset.update({"c" + c: w for c, w in zip(chunk_seeds, chunk_weights, strict=True)})
    expected = _igraph_masses(edges, cites, reset, damping)
    got = {("e" if kind == "entity" else "c") + node: mass for kind, node, mass, _ in rows}
    reachable = {x for x, m in expected.items() if m > 0}
    assert set(got) == reachable | (set(got) & set(expected)), set(got) ^ reachable
    assert abs(sum(got.values()) - 1) < 1e-6
    worst = max(abs(got.get(x, 0.0) - m) for x, m in expected.items())
    assert worst < 1e-5, worst
    chunks_got = [node for kind, node, _, _ in rows if kind == "chunk"]
    chunks_expected = sorted(
        (x[1:] for x in expected if x.startswith("c") and x[1:] in chunks_got), key=lambda c: (-expected["c" + c], c)
    )
    top = 10
    assert len(set(chunks_got[:top]) & set(chunks_expected[:top])) >= top - 1
    assert _spearman(chunks_got, chunks_expected) > 0.99
    ranks = [rank for kind, _, _, rank in rows if kind == "chunk"]
    assert ranks == list(range(1, len(ranks) + 1))


def test_names_bounds_and_the_budget(tconn: TenantSession) -> None:
    rng = random.Random(5)
    edges, cites = _graph(rng, entities=30, chunks=40)
    with tconn.acting() as conn:
        _load(conn, edges, cites)
    with tconn.acting() as conn:
        by_id = conn.execute("SELECT node_id, mass FROM kgrag.personalized_pagerank(ARRAY['e001'])").fetchall()
        by_name = conn.execute("SELECT node_id, mass FROM kgrag.personalized_pagerank(ARRAY['ENTITY 001'])").fetchall()
        assert by_id == by_name and by_id[0][0] == "e001"
        one_hop = conn.execute("SELECT count(*) FROM kgrag.personalized_pagerank(ARRAY['e001'], hops => 0)").fetchone()
        assert one_hop is not None and 1 < one_hop[0] < len(by_id)  # the seed and the chunks citing it
    for call, message in [
        ("kgrag.personalized_pagerank(ARRAY['e001'], damping => 1)", "damping"),
        ("kgrag.personalized_pagerank(ARRAY['e001'], hops => 99)", "hops"),
        ("kgrag.personalized_pagerank(ARRAY['e001'], ARRAY[1, 2]::float8[])", "one weight per seed"),
        ("kgrag.personalized_pagerank(ARRAY['e001'], ARRAY['-1']::float8[])", "finite"),
        ("kgrag.personalized_pagerank(ARRAY['no such entity'])", "no entity"),
    ]:
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=message), tconn.acting() as conn:
            conn.execute(f"SELECT * FROM {call}")
    with tconn.acting() as conn:  # the work is bounded: at most ppr_max_edges entities, links and mentions
        conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'ppr_max_edges', '5')")
    with tconn.acting() as conn:
        bounded = "SELECT kind, count(*) FROM kgrag.personalized_pagerank(ARRAY['e001'], hops => 3) GROUP BY kind"
        kinds = dict(conn.execute(bounded).fetchall())
        assert 0 < kinds["entity"] <= 5 and 0 < kinds["chunk"] <= 5, kinds
        assert len(by_id) > 10  # without the bound
    with tconn.acting() as conn:
        conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'khop_timeout_ms', '1')")
    with pytest.raises(psycopg.errors.QueryCanceled, match="graph traversal"), tconn.acting() as conn:
        conn.execute("SELECT * FROM kgrag.personalized_pagerank(ARRAY['e001'], hops => 3)")


def test_the_local_route_ranks_the_graph_by_pagerank_when_asked(demo: str, use: Embedder) -> None:
    """On the sample corpus, as a reader: the graph's chunks carry their PageRank mass, the reason
    names the mechanism, and the default (paths) says so too."""
    question = "Which services does the Payment Gateway depend on?"
    search = "SELECT kind, source, payload, reason FROM kgrag.kgrag_search(%s::vector, 'local', %s, 5, options => %s)"
    vec = use.embed([question])[0].tolist()
    with connect(demo, role=READER) as conn, tenant_transaction(conn, DEMO_TENANT):
        ranked = conn.execute(search, [vec, question, Jsonb({"graph_ranking": "pagerank"})]).fetchall()
        paths = conn.execute(search, [vec, question, Jsonb({})]).fetchall()
        both = conn.execute(search, [vec, question, Jsonb({"graph_ranking": "both"})]).fetchall()
        text_only = conn.execute(search, [None, question, Jsonb({"graph_ranking": "pagerank"})]).fetchall()
    assert "Personalized PageRank" in ranked[0][3] and "k-hop paths" in paths[0][3]
    graph_chunks = [payload for kind, source, payload, _ in ranked if kind == "chunk" and source == "pagerank"]
    assert graph_chunks and all(p["ppr_mass"] > 0 for p in graph_chunks)
    masses = [p["ppr_mass"] for p in graph_chunks]
    by_graph_rank = sorted(graph_chunks, key=lambda p: p["ranks"]["pagerank"])
    assert [p["ppr_mass"] for p in by_graph_rank] == sorted(masses, reverse=True)
    assert not any("ppr_mass" in payload or "pagerank" in payload.get("ranks", {}) for _, _, payload, _ in paths)
    fused = [payload["ranks"] for kind, _, payload, _ in both if kind == "chunk"]
    assert any("graph" in r for r in fused) and any("pagerank" in r for r in fused)
    assert "Personalized PageRank" in both[0][3] and "k-hop paths" in both[0][3]
    # the README's psql example, as a reader
    with connect(demo, role=READER) as conn, tenant_transaction(conn, DEMO_TENANT):
        example = conn.execute(
            "SELECT kind, node_id, round(mass::numeric, 4), rank"
            " FROM kgrag.personalized_pagerank(ARRAY['Payment Gateway']) WHERE rank <= 3"
        ).fetchall()
    assert [(kind, rank) for kind, _, _, rank in example] == [("entity", r) for r in (1, 2, 3)] + [
        ("chunk", r) for r in (1, 2, 3)
    ]
    assert example[0][1] == "service:payment gateway"
    # from psql, the text alone: the linked entities seed the walk, no chunk does
    assert any(kind == "chunk" and source == "pagerank" for kind, source, _, _ in text_only), text_only
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match="graph_ranking"),
        connect(demo, role=READER) as conn,
        tenant_transaction(conn, DEMO_TENANT),
    ):
        conn.execute(search, [vec, question, Jsonb({"graph_ranking": "magic"})])
