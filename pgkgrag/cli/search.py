"""pgkgrag search, context, ask and eval: questions asked of a tenant."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape

from pgkgrag.cli import render
from pgkgrag.cli.common import (
    console,
    friendly_errors,
    json_option,
    open_tenant,
    parse_options,
    print_json,
    tenant_option,
    with_search_options,
)
from pgkgrag.db.connections import READER
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.retrieval.evaluation import evaluate, read_golden
from pgkgrag.retrieval.search import cited_chunks, context, routes, run_search


@click.command(name="search")
@click.argument("question")
@with_search_options
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON array.")
@friendly_errors
def search_command(
    question: str, route: str, k: int, option_pairs: tuple[str, ...], tenant: str | None, as_json: bool
) -> None:
    """Search: the route and why, then the results with their citations."""
    config, conn = open_tenant(tenant, READER)
    with conn:
        result = run_search(
            conn, config.tenant, tenant_embedder(conn, config.tenant), question, route, k, parse_options(option_pairs)
        )
        texts = {c.chunk_id: c.text for c in cited_chunks(conn, config.tenant, result.chunks())}
    if as_json:
        console.print_json(render.results_json(result))
        return
    console.print(f"[bold]route:[/] {escape(f'{result.route} - {result.reason}')}", highlight=False)
    if not result.rows:
        console.print("no rows (the reason above says why)", highlight=False)
        return
    console.print(render.results_table(result, texts))


@click.command(name="context")
@click.argument("question")
@with_search_options
@click.option("--max-chars", type=click.IntRange(1, 1_000_000), default=4000, show_default=True)
@friendly_errors
def context_command(
    question: str, route: str, k: int, option_pairs: tuple[str, ...], tenant: str | None, max_chars: int
) -> None:
    """Print the context block an LLM would get for the question (within --max-chars)."""
    config, conn = open_tenant(tenant, READER)
    with conn:
        embedder = tenant_embedder(conn, config.tenant)
        block = context(conn, config.tenant, embedder, question, route, k, max_chars, parse_options(option_pairs))
    console.print(block or "(empty: no rows; `pgkgrag search` says why)", highlight=False, markup=False)


@click.command(name="ask")
@click.argument("question")
@with_search_options
@click.option("--json", "as_json", is_flag=True, help="Print the answer, its citations and its cost as JSON.")
@friendly_errors
def ask_command(
    question: str, route: str, k: int, option_pairs: tuple[str, ...], tenant: str | None, as_json: bool
) -> None:
    """Answer from the tenant's documents only, with verified citations (an OpenAI-compatible chat
    endpoint: KGRAG_LLM_URL, KGRAG_LLM_MODEL, KGRAG_LLM_API_KEY)."""
    from pgkgrag.llm.answers import ask
    from pgkgrag.llm.client import LlmSettings, OpenAICompatibleClient

    llm = OpenAICompatibleClient(LlmSettings.from_env())
    config, conn = open_tenant(tenant, READER)
    with conn:
        embedder = tenant_embedder(conn, config.tenant)
        answer = ask(conn, config.tenant, embedder, llm, question, route, k, parse_options(option_pairs))
    llm.close()
    if as_json:
        console.print_json(json.dumps(answer.to_json(), ensure_ascii=False))
        return
    console.print(escape(answer.answer), highlight=False)
    console.print(f"[bold]route:[/] {escape(f'{answer.route} - {answer.reason}')}", highlight=False)
    console.print(render.answer_footer(answer), highlight=False)


@click.command(name="eval")
@click.argument("golden", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--k", type=click.IntRange(1, 1000), default=5, show_default=True)
@tenant_option
@json_option
@friendly_errors
def eval_command(golden: Path, k: int, tenant: str | None, as_json: bool) -> None:
    """Evaluate routing and retrieval per route on GOLDEN.jsonl
    ({"question", "route", "expect_chunks": [...], "expect_empty": false} per line)."""
    config, conn = open_tenant(tenant, READER)
    with conn:
        questions = read_golden(golden, routes(conn))
        figures = evaluate(conn, config.tenant, tenant_embedder(conn, config.tenant), questions, k)
    if as_json:
        print_json({"questions": len(questions), "k": k, "routes": dict(figures)})
        return
    console.print(render.evaluation_table(figures, f"evaluation per route ({len(questions)} questions, k = {k})"))
    for route, f in figures.items():
        for miss in f.misses:
            console.print(f"[yellow]{route}[/]: {escape(miss)}", highlight=False)
