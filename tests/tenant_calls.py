"""Every call a tenant can make, to aim at another tenant's ids: the reads (each public function and
route, and the driver's plumbing) and the writes, as (query, params) by name; what a tenant's graph
holds, by id. The tenancy, trust, forgetting and Citus tests use them."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from pgkgrag.db.connections import READER, connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder

ROUTES = ["auto", "local", "global", "mixed", "vector"]
EMBEDDER = HashEmbedder(512)  # the tenancy corpora's embedder


def _rows(conn: psycopg.Connection, query: str, params: list[Any]) -> list[str]:
    """The rows as sorted JSON text (order is not the point here; content is)."""
    return sorted(json.dumps(list(row), default=str, sort_keys=True) for row in conn.execute(query, params).fetchall())  # type: ignore[arg-type]


def _ids(conn: psycopg.Connection, query: str) -> list[str]:
    return [r[0] for r in conn.execute(query).fetchall()]


def _graph_ids(conn: psycopg.Connection, tenant: str) -> dict[str, list[str]]:
    with tenant_transaction(conn, tenant):
        return {
            "docs": _ids(conn, "SELECT doc_id FROM kgrag.document ORDER BY 1"),
            "chunks": _ids(conn, "SELECT chunk_id FROM kgrag.chunk ORDER BY 1"),
            "entities": _ids(conn, "SELECT entity_id FROM kgrag.entity ORDER BY 1"),
            "communities": _ids(conn, "SELECT community_id FROM kgrag.community ORDER BY 1"),
            "hashes": _ids(conn, "SELECT DISTINCT content_hash FROM kgrag.chunk ORDER BY 1"),
        }


# Functions that read no table: they compute from their arguments alone.
PURE = {
    "canonical_name",
    "fold",
    "squash",
    "trigrams",
    "entity_key",
    "relation_key",
    "embedding_text",
    "lexical_query",
    "rrf",
    "routes",
    "check_embedding",
    "is_page_about",
    "capitalized_words",
    "is_cased_name",
    "source_tag",
    "report_embedding_text",
}
# Functions for the schema owner only (the application roles may not execute them).
OWNER_ONLY = {
    "distribute",
    "delegate_calls",
    "grant_tenant",
    "revoke_tenant",
    "create_key",
    "list_keys",
    "revoke_key",
    "grant_groups",
    "revoke_groups",
}
# Functions that need an API key the owner made: tests/serve/test_keys_and_limits.py calls them as
# the service's login role, for the key's tenant and for another.
KEYED = {"use_key"}


def reads(question: str, others: dict[str, list[str]], mine: dict[str, list[str]]) -> dict[str, tuple[str, list[Any]]]:
    """Every reading public function, with arguments that name both tenants' objects."""
    vec = EMBEDDER.embed([question])[0]
    # the walks take the caller's own ids: another tenant's id is refused as an unknown name
    # (test_another_tenants_entity_is_an_unknown_name)
    seeds = sorted(mine["entities"])
    foreign_chunks = others["chunks"]
    calls: dict[str, tuple[str, list[Any]]] = {
        "current_tenant": ("SELECT kgrag.current_tenant()", []),
        "current_groups": ("SELECT kgrag.current_groups()", []),
        "use_tenant": ("SELECT kgrag.use_tenant(kgrag.current_tenant())", []),
        "dimension": ("SELECT kgrag.dimension()", []),
        "vector_index": ("SELECT kgrag.vector_index()", []),
        "version": ("SELECT kgrag.version()", []),
        "setting": ("SELECT kgrag.setting('rrf_k')", []),
        # what pgkgrag serve checks before it embeds a question (the tenant's limits)
        "check_question": ("SELECT kgrag_private.check_question(%s)", [question]),
        "search_options": ("SELECT kgrag_private.search_options(%s::jsonb)", ['{"hops": 1}']),
        "reranker": ("SELECT * FROM kgrag.reranker()", []),
        "last_search": ("SELECT * FROM kgrag.last_search()", []),
        "report_context": (
            # each id once: two tenants may have a community of the same id (the same members)
            "SELECT r.* FROM (SELECT DISTINCT x FROM unnest(%s::text[]) AS x) AS c(c),"
            " kgrag.report_context(c.c, 4000) AS r",
            [others["communities"] + mine["communities"]],
        ),
        "communities_outdated": ("SELECT kgrag_private.communities_outdated()", []),
        "link_entities": ("SELECT * FROM kgrag.link_entities(%s, include_isolated => true)", [question]),
        "search_chunks_lexical": ("SELECT * FROM kgrag.search_chunks_lexical(%s, 50)", [question]),
        "search_chunks_vector": ("SELECT * FROM kgrag.search_chunks_vector(%s, 50)", [vec]),
        "quantize": ("SELECT kgrag.quantize(%s)", [vec]),
        "search_entities_vector": ("SELECT * FROM kgrag.search_entities_vector(%s, 50, profile => true)", [vec]),
        "search_reports_vector": ("SELECT * FROM kgrag.search_reports_vector(%s, 50)", [vec]),
        "resolve_entities": ("SELECT kgrag.resolve_entities(%s)", [seeds]),
        "k_hop": ("SELECT * FROM kgrag.k_hop(%s, 3)", [seeds]),
        # against the edges' direction, capped: each edge asks its source's strongest (among_strongest)
        "k_hop/in, capped": ("SELECT * FROM kgrag.k_hop(%s, 2, 2, direction => 'in')", [seeds]),
        "fanout": ("SELECT s, f.* FROM unnest(%s::text[]) AS s, kgrag.fanout(s, 3) AS f", [seeds]),
        "path_relations": ("SELECT * FROM kgrag.path_relations(%s)", [seeds[:4]]),
        "route": ("SELECT * FROM kgrag.route(%s, %s)", [vec, question]),
        "citations_resolvable": (
            "SELECT kgrag.citations_resolvable(%s), kgrag.citations_resolvable(%s)",
            [foreign_chunks, mine["chunks"]],
        ),
        "cited_chunks": ("SELECT * FROM kgrag.cited_chunks(%s)", [foreign_chunks + mine["chunks"]]),
        "check_citations": (
            "SELECT status, doc_id, title, quote, page, headings, source FROM kgrag.check_citations(%s, %s)",
            [foreign_chunks + mine["chunks"], foreign_chunks],
        ),
        "context_blocks": ("SELECT * FROM kgrag.context_blocks(%s, 'auto', %s, 6000)", [vec, question]),
        "context": ("SELECT kgrag.context(%s, 'mixed', %s, 6000)", [vec, question]),
        "neighbourhood": ("SELECT * FROM kgrag.neighbourhood(%s, 3)", [seeds]),
        "personalized_pagerank": (
            "SELECT * FROM kgrag.personalized_pagerank(%s, NULL, %s, hops => 3)",
            [seeds, foreign_chunks + mine["chunks"]],
        ),
        "graph_totals": ("SELECT * FROM kgrag.graph_totals()", []),
        "edge_rank_depth": ("SELECT kgrag.edge_rank_depth()", []),
        "stored_documents": ("SELECT * FROM kgrag_private.stored_documents(%s)", [others["docs"] + mine["docs"]]),
        "chunk_texts_with_vectors": (
            "SELECT kgrag_private.chunk_texts_with_vectors(%s)",
            [others["hashes"] + mine["hashes"]],
        ),
        "reembed_todo": ("SELECT * FROM kgrag.reembed_todo('e5', 'chunk', NULL, 50)", []),
        "embedding_todo": (
            "SELECT 'entity', * FROM kgrag.embedding_todo('entity') UNION ALL"
            " SELECT 'report', * FROM kgrag.embedding_todo('report')",
            [],
        ),
        "known_names": ("SELECT * FROM kgrag_private.known_names()", []),
        "community_graph": ("SELECT * FROM kgrag_private.community_graph()", []),
        "community_partition": ("SELECT * FROM kgrag_private.community_partition()", []),
        "template_reports": ("SELECT * FROM kgrag_private.template_reports()", []),
        "ontology_entity_type": ("SELECT kgrag.ontology_entity_type('service')", []),
        "ontology_relation_type": ("SELECT kgrag.ontology_relation_type('depends on')", []),
        "text_search_config": ("SELECT kgrag.text_search_config('pt-BR')::text", []),
        "search_reports_lexical": ("SELECT * FROM kgrag.search_reports_lexical(%s, 50)", [question]),
        # names every tenant by design (a directory, not data): only the counts' keys are compared
        "tenants": ("SELECT count(*) > 0 FROM kgrag.tenants()", []),
    }
    for route in ROUTES:
        calls[f"kgrag_search/{route}"] = ("SELECT * FROM kgrag.kgrag_search(%s, %s, %s, 50)", [vec, route, question])
    # last: it narrows the rest of the transaction (to the groups already held: nothing changes)
    calls["use_groups"] = (
        "SELECT kgrag.use_groups(ARRAY(SELECT g FROM unnest(kgrag.current_groups()) g WHERE g <> '*'))",
        [],
    )
    return calls


def writes(others: dict[str, list[str]]) -> dict[str, tuple[str, list[Any]]]:
    """Every writing public function, aimed at the other tenant's ids."""
    entities = others["entities"] or ["none"]
    vectors = list(EMBEDDER.embed(entities))
    return {
        "delete_documents": ("SELECT kgrag.delete_documents(%s)", [others["docs"]]),
        # for everyone: the caller's own documents of those ids only (another tenant's are unknown)
        "set_access": ("SELECT kgrag.set_access(%s, NULL)", [others["docs"]]),
        "store_embeddings": (
            "SELECT kgrag.store_embeddings('entity', %s, %s, %s)",
            [entities, vectors, ["h"] * len(entities)],
        ),
        "reembed_store": (  # the other tenant's chunks, as if moving them to another model (stores nothing)
            "SELECT kgrag.reembed_store('hash', 512, 'chunk', %s, %s, %s)",
            [others["chunks"][:1] or ["none#0"], vectors[:1], ["h"]],
        ),
        "reembed_switch": ("SELECT kgrag.reembed_switch('hash', 512)", []),  # its own tenant only (refused: 55000)
        "set_report_text": (  # citing the other tenant's chunks: the citation rule is no shield here
            "SELECT kgrag_private.set_report_text(c, 'taken over ' || %s, 'attacker') FROM unnest(%s::text[]) c",
            [" ".join(f"[{chunk}]" for chunk in others["chunks"]) or "[none#0]", others["communities"] or ["none"]],
        ),
        "refresh_edge_ranks": ("SELECT kgrag.refresh_edge_ranks(%s)", [entities]),
        "record_ingest_failure": ("SELECT kgrag_private.record_ingest_failure(%s, 'h', 'attack')", [others["docs"][0]]),
        "record_input_failures": (  # the other tenant's document named: kept under the caller's tenant only
            "SELECT kgrag_private.record_input_failures('{}', '{}', jsonb_build_array(jsonb_build_object("
            "'source', 'x.jsonl', 'line', 1, 'doc_id', %s::text, 'reason', 'attack')))",
            [others["docs"][0]],
        ),
        "failed_sources": ("SELECT kgrag_private.failed_sources()", []),
        "log_llm_calls": (  # rows of the caller's tenant only
            'SELECT kgrag_private.log_llm_calls(\'[{"purpose": "answer", "model": "m"}]\')',
            [],
        ),
        "refresh_answers": ("SELECT kgrag_private.refresh_answers()", []),
        "refresh_reports": ("SELECT kgrag_private.refresh_reports()", []),
        "refresh_lexeme_stats": ("SELECT kgrag.refresh_lexeme_stats()", []),
        "refresh_common_words": ("SELECT kgrag.refresh_common_words()", []),
        "refresh_alias_trigram_stats": ("SELECT kgrag.refresh_alias_trigram_stats()", []),
        "refresh_chunk_spread": ("SELECT kgrag.refresh_chunk_spread()", []),
        # an empty staged batch and an empty clustering: the caller's own graph only
        "stage_begin": ("SELECT kgrag_private.stage_begin()", []),
        "ingest_apply": ("SELECT kgrag_private.ingest_apply()", []),
        "replace_communities": ("SELECT kgrag_private.replace_communities()", []),
        "use_embedder": ("SELECT kgrag.use_embedder('hash')", []),
        "log_answer": ("SELECT kgrag.log_answer('q', 'local', false, 1, 2, 3, 4, 1, 0, 5)", []),
        "purge": ("SELECT kgrag.purge()", []),  # the current tenant's rows past its retention
        # a curator's decisions on the other tenant's entities and relations (refused: not found)
        "reject_relation": (
            "SELECT kgrag.reject_relation(%s, 'CO_OCCURS', %s, 'attack')",
            [entities[0], entities[-1]],
        ),
        "rename_entity": ("SELECT kgrag.rename_entity(%s, 'taken over')", [entities[0]]),
        "correct_relation": (
            "SELECT kgrag.correct_relation(%s, 'CO_OCCURS', %s, 'OWNS', 'attack')",
            [entities[0], entities[-1]],
        ),
        "correct_evidence": (  # the other tenant's entities and chunk (refused: not found)
            "SELECT kgrag.correct_evidence(%s, 'CO_OCCURS', %s, %s, 'attack')",
            [entities[0], entities[-1], (others["chunks"] or ["none#0"])[0]],
        ),
        "approve": ("SELECT kgrag.approve(%s, 'attack')", [entities[0]]),
        "merge_entities": ("SELECT kgrag.merge_entities(%s, %s, 'attack')", [entities[0], entities[-1]]),
        "split_entity": ("SELECT kgrag.split_entity(%s, %s, 'attack')", [entities[0], others["docs"][0]]),
        "apply_decisions": ("SELECT kgrag_private.apply_decisions()", []),
        "rekey_identifiers": ("SELECT kgrag_private.rekey_identifiers(100)", []),  # the caller's documents only
        # the queue: a document of the other tenant's name queued for the caller's own; the other
        # tenant's tickets (the numbers are one sequence) neither claimed, settled nor retried
        "submit_document": (
            "SELECT kgrag.submit_document(jsonb_build_object('doc_id', %s::text, 'text', 'taken over'))",
            [others["docs"][0]],
        ),
        "claim_tickets": ("SELECT count(*) FROM kgrag_private.claim_tickets(100)", []),
        "settle_tickets": (
            "SELECT kgrag_private.settle_tickets(jsonb_agg(jsonb_build_object('ticket', t, 'state', 'stored')))"
            " FROM generate_series(1, 1000) AS t",
            [],
        ),
        "retry_documents": ("SELECT kgrag.retry_documents(ARRAY(SELECT generate_series(1, 1000)::bigint))", []),
        "llm_cache_get": ("SELECT * FROM kgrag_private.llm_cache_get(%s)", [["k"]]),  # a writer's (revision 0042)
        "llm_cache_put": (
            """SELECT kgrag_private.llm_cache_put('k', 'm', '{"entities": [], "relations": []}', 'h')""",
            [],
        ),
    }


def answers(dsn: str, tenant: str, calls: dict[str, tuple[str, list[Any]]]) -> dict[str, list[str]]:
    with connect(dsn, role=READER) as conn, tenant_transaction(conn, tenant):
        return {name: _rows(conn, query, params) for name, (query, params) in calls.items()}
