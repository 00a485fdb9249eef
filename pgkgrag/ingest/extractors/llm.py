"""Extraction by an LLM behind any OpenAI-compatible endpoint, validated before anything is kept.

Per chunk: the model is asked for JSON (schema in response_format) within an ontology. Its answer
is parsed leniently (code fences and prose around the JSON are tolerated) and then checked
strictly:
- an answer that is not a JSON object of the expected shape (truncated, wrong types) fails the
  chunk, and with it the document: nothing of the document is written, nothing is cached, and
  the document is recorded in kgrag.ingest_failure; a later run retries it;
- an entity whose name does not appear in the chunk (squashed comparison), a type outside the
  ontology, a relation whose quote is not literally in the chunk, or whose endpoints are not
  accepted entities, is rejected and counted with its reason;
- a negated fact is kept as negated evidence, never as an edge.
Validated answers are cached by chunk hash + model + prompt version + ontology.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
from pydantic import ValidationError

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.ingest.chunking import Chunk
from pgkgrag.ingest.extractors.base import (
    Extraction,
    ExtractionFailed,
    FoundEntity,
    FoundRelation,
    PreparedDocument,
    SetAside,
    normalized,
    ontology_types,
)
from pgkgrag.ingest.extractors.llm_prompt import (
    PROMPT_VERSION,
    ExtractionOutput,
    MalformedOutput,
    Ontology,
    chunk_messages,
    output_schema,
    parse_json_object,
)
from pgkgrag.llm.client import (
    Completion,
    LlmSettings,
    OpenAICompatibleClient,
    RequestFailed,
    llm_calls,
    log_llm_calls,
)
from pgkgrag.queries import Q

MAX_SET_ASIDE = 20  # what a chunk's answer may set aside for review; the rest is only counted


class LlmExtractor:
    name = "llm"

    def __init__(self, client: OpenAICompatibleClient, ontology: Ontology) -> None:
        self.client = client
        self.ontology = ontology

    @classmethod
    def from_env(cls, conn: psycopg.Connection, tenant: str) -> LlmExtractor:
        settings = LlmSettings.from_env()
        with tenant_transaction(conn, tenant):
            row = conn.execute(Q["ontology"]).fetchone()
        return cls(OpenAICompatibleClient(settings), Ontology.from_setting(row[0] if row else {}))

    def fingerprint(self) -> str:
        return f"llm:{self.client.settings.model}:{PROMPT_VERSION}:{self.ontology.fingerprint()}"

    def _cache_key(self, chunk: Chunk) -> str:
        return hashlib.sha256(f"{chunk.content_hash}|{self.fingerprint()}".encode()).hexdigest()

    def extract(self, conn: psycopg.Connection, docs: list[PreparedDocument]) -> dict[str, Extraction | Exception]:
        keys = {self._cache_key(c): c for p in docs for c in p.chunks}
        cached: dict[str, dict[str, Any]] = dict(conn.execute(Q["llm_cache_get"], [list(keys)]).fetchall())
        todo = [(key, chunk) for key, chunk in keys.items() if key not in cached]
        with ThreadPoolExecutor(max_workers=self.client.settings.concurrency) as pool:
            answers = list(pool.map(self._ask, [chunk.text for _, chunk in todo]))
        fresh: dict[str, dict[str, Any] | Exception] = {}
        parsed: list[tuple[str, Chunk, ExtractionOutput]] = []
        for (key, chunk), answer in zip(todo, answers, strict=True):
            if isinstance(answer, Exception):
                fresh[key] = answer
                continue
            try:
                parsed.append((key, chunk, ExtractionOutput.model_validate(parse_json_object(answer.text))))
            except MalformedOutput as exc:
                fresh[key] = exc
            except ValidationError as exc:
                fresh[key] = MalformedOutput(
                    f"the answer's JSON has the wrong shape: {exc.errors()[0]['msg']} at "
                    f"{'.'.join(str(p) for p in exc.errors()[0]['loc'])}"
                )
        for (key, chunk, _), result in zip(parsed, self._validate(conn, parsed), strict=True):
            fresh[key] = result
            conn.execute(Q["llm_cache_put"], [key, self.client.settings.model, json.dumps(result), chunk.content_hash])
        # each call made, and each chunk answered from the cache, for kgrag.llm_call
        calls = llm_calls("extraction", [a for a in answers if isinstance(a, Completion)])
        calls += [{"purpose": "extraction", "model": self.client.settings.model, "cached": True}] * len(cached)
        log_llm_calls(conn, calls)
        results: dict[str, Extraction | Exception] = {}
        for prepared in docs:
            results[prepared.document.doc_id] = self._merge(prepared, cached, fresh)
        return results

    def _ask(self, text: str) -> Completion | Exception:
        try:
            return self.client.complete(chunk_messages(text, self.ontology), output_schema(self.ontology))
        except RequestFailed as exc:
            return exc

    def _validate(
        self, conn: psycopg.Connection, parsed: list[tuple[str, Chunk, ExtractionOutput]]
    ) -> list[dict[str, Any]]:
        texts = [chunk.text for _, chunk, _ in parsed]
        names = [e.name for _, _, out in parsed for e in out.entities]
        ends = [x for _, _, out in parsed for r in out.relations for x in (r.source, r.target)]
        squashed = iter(normalized(conn, "squash", texts + names + ends))
        chunk_sq = [next(squashed) for _ in texts]
        name_sq = iter([next(squashed) for _ in names])
        end_sq = iter([next(squashed) for _ in ends])
        entity_types = iter(ontology_types(conn, "entity", [e.type for _, _, out in parsed for e in out.entities]))
        relation_types = iter(ontology_types(conn, "relation", [r.type for _, _, out in parsed for r in out.relations]))
        results = []
        for (_, chunk, out), text_sq in zip(parsed, chunk_sq, strict=True):
            rejected: Counter[str] = Counter()
            set_aside: list[dict[str, str]] = []  # outside the ontology: for a person to check
            entities: dict[str, dict[str, str]] = {}
            for entity in out.entities:
                key = next(name_sq)
                etype = next(entity_types)
                if etype is None:
                    rejected["entity type outside the ontology"] += 1
                    set_aside.append(
                        {"what": f"{entity.name} ({entity.type})", "reason": "entity type outside the ontology"}
                    )
                elif not key or key not in text_sq:
                    rejected["entity not in the source text"] += 1
                else:
                    # an identifier counts only where the passage states it
                    identifier = entity.identifier.strip()
                    entities.setdefault(
                        key,
                        {
                            "name": entity.name.strip(),
                            "type": etype,
                            "description": entity.description.strip(),
                            "identifier": identifier if identifier and identifier in chunk.text else "",
                        },
                    )
            relations = []
            for relation in out.relations:
                src, dst = entities.get(next(end_sq)), entities.get(next(end_sq))
                rel = next(relation_types)
                if rel is None:
                    rejected["relation type outside the ontology"] += 1
                    set_aside.append(
                        {
                            "what": f"{relation.source} -[{relation.type}]-> {relation.target}",
                            "reason": "relation type outside the ontology",
                            "quote": relation.quote if relation.quote and relation.quote in chunk.text else "",
                        }
                    )
                elif src is None or dst is None:
                    rejected["relation endpoint is not an extracted entity"] += 1
                elif not relation.quote or relation.quote not in chunk.text:
                    rejected["quote not in the source text"] += 1
                else:
                    relations.append(
                        {
                            "source": src["name"],
                            "source_type": src["type"],
                            "target": dst["name"],
                            "target_type": dst["type"],
                            "type": rel,
                            "quote": relation.quote,
                            "negated": relation.negated,
                            "confidence": relation.confidence,
                        }
                    )
            results.append(
                {
                    "entities": list(entities.values()),
                    "relations": relations,
                    "rejected": dict(rejected),
                    "set_aside": set_aside[:MAX_SET_ASIDE],
                }
            )
        return results

    def _merge(
        self,
        prepared: PreparedDocument,
        cached: dict[str, dict[str, Any]],
        fresh: dict[str, dict[str, Any] | Exception],
    ) -> Extraction | Exception:
        out = Extraction()
        by_key: dict[tuple[str, str], FoundEntity] = {}
        for chunk in prepared.chunks:
            key = self._cache_key(chunk)
            result = cached.get(key) or fresh.get(key)
            if isinstance(result, Exception):
                return ExtractionFailed(f"chunk {prepared.document.doc_id}#{chunk.ordinal}: {result}")
            assert result is not None
            out.rejected.update(result.get("rejected", {}))
            out.set_aside += [
                SetAside(chunk.ordinal, s["what"], s["reason"], s.get("quote", ""), self.name)
                for s in result.get("set_aside", [])
            ]
            for e in result["entities"]:
                found = by_key.setdefault(
                    (e["name"].casefold(), e["type"]), FoundEntity(e["name"], e["type"], ordinals=[])
                )
                if len(e["description"]) > len(found.description):
                    found.description = e["description"]
                found.identifier = found.identifier or e.get("identifier") or None
                assert found.ordinals is not None
                if chunk.ordinal not in found.ordinals:
                    found.ordinals.append(chunk.ordinal)
            for r in result["relations"]:
                out.relations.append(
                    FoundRelation(
                        r["source"],
                        r["target"],
                        r["type"],
                        self.name,
                        chunk.ordinal,
                        r["source_type"],
                        r["target_type"],
                        r["quote"],
                        float(r["confidence"]),
                        bool(r["negated"]),
                    )
                )
        out.entities = list(by_key.values())
        return out
