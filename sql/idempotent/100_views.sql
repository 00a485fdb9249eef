-- The analyst's views: the current tenant's graph read from psql without knowing the tables.

CREATE OR REPLACE VIEW kgrag.entities WITH (security_invoker = true) AS
SELECT e.entity_id, e.name, e.type, e.description,
       ARRAY(SELECT DISTINCT a.alias FROM kgrag.alias AS a
              WHERE a.tenant_id = e.tenant_id AND a.entity_id = e.entity_id AND a.alias <> e.name
              ORDER BY a.alias) AS aliases,
       e.degree, e.answer, e.answer_chunk_id,
       top.community_id AS community, top.title AS community_title,
       e.answer_stale,
       EXISTS (SELECT 1 FROM kgrag_private.connected_in_no_community AS u
                WHERE u.tenant_id = e.tenant_id AND u.entity_id = e.entity_id) AS no_community,
       e.embedding IS NULL AS not_embedded
  FROM kgrag.entity AS e
  LEFT JOIN LATERAL (SELECT m.community_id, c.title FROM kgrag.community_member AS m
                       JOIN kgrag.community AS c ON c.tenant_id = m.tenant_id AND c.community_id = m.community_id
                      WHERE m.tenant_id = e.tenant_id AND m.entity_id = e.entity_id
                      ORDER BY c.level, m.community_id LIMIT 1) AS top ON true
 WHERE e.tenant_id = kgrag.current_tenant();
GRANT SELECT ON kgrag.entities TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.entities IS
'The current tenant''s entities as an analyst reads them: entity_id, name, type, description, the other names it is known by (aliases), degree, its answer and the chunk it came from, its coarsest community and that community''s title, and what is stale (answer_stale; no_community: connected to another entity but in no community, after an ingest without a build; not_embedded). E.g. SELECT * FROM kgrag.entities WHERE name ILIKE ''payment gateway'';';

CREATE OR REPLACE VIEW kgrag.edges WITH (security_invoker = true) AS
SELECT g.src, s.name AS src_name, g.rel, g.dst, d.name AS dst_name, g.weight, g.confidence,
       g.evidence_chunk_id, g.evidence_quote, g.valid_from, g.valid_to, g.extractor
  FROM kgrag.edge AS g
  JOIN kgrag.entity AS s ON s.tenant_id = g.tenant_id AND s.entity_id = g.src
  JOIN kgrag.entity AS d ON d.tenant_id = g.tenant_id AND d.entity_id = g.dst
 WHERE g.tenant_id = kgrag.current_tenant();
GRANT SELECT ON kgrag.edges TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.edges IS
'The current tenant''s edges with names on both ends: src, src_name, rel (CO_OCCURS, stored both ways, or a stated relation in its own direction), dst, dst_name, weight, confidence, the evidence chunk and quote, the validity (valid_from, valid_to) and the extractor. E.g. who signed a contract: SELECT src_name FROM kgrag.edges WHERE rel = ''SIGNED'' AND dst_name ILIKE ''payflow%'';';

CREATE OR REPLACE VIEW kgrag.communities WITH (security_invoker = true) AS
SELECT c.community_id, c.level, c.parent_id, c.title, c.size, c.weight, c.stale,
       ARRAY(SELECT e.name FROM kgrag.community_member AS m
               JOIN kgrag.entity AS e ON e.tenant_id = m.tenant_id AND e.entity_id = m.entity_id
              WHERE m.tenant_id = c.tenant_id AND m.community_id = c.community_id
              ORDER BY e.degree DESC, e.name) AS members,
       r.report, r.stale AS report_stale, r.generator, r.evidence_chunk_ids
  FROM kgrag.community AS c
  LEFT JOIN kgrag.community_report AS r ON r.tenant_id = c.tenant_id AND r.community_id = c.community_id
 WHERE c.tenant_id = kgrag.current_tenant();
GRANT SELECT ON kgrag.communities TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.communities IS
'The current tenant''s communities (level 0 the coarsest): parent, title, size, weight (distinct documents), whether stale, the members'' names (best connected first) and the report with whether it is stale, what wrote it and the chunks it cites.';

CREATE OR REPLACE VIEW kgrag.staleness WITH (security_invoker = true) AS
SELECT x.what, x.how_many, x.fix
  FROM (VALUES
        (1, 'stale communities',
         (SELECT count(*) FROM kgrag.community AS c WHERE c.tenant_id = kgrag.current_tenant() AND c.stale),
         'pgkgrag build'),
        (2, 'connected entities in no community',
         (SELECT count(*) FROM kgrag_private.connected_in_no_community AS u WHERE u.tenant_id = kgrag.current_tenant()),
         'pgkgrag build'),
        (3, 'stale reports (not served)',
         (SELECT count(*) FROM kgrag.community_report AS r WHERE r.tenant_id = kgrag.current_tenant() AND r.stale),
         'pgkgrag build'),
        (4, 'stale answers',
         (SELECT count(*) FROM kgrag.entity AS e WHERE e.tenant_id = kgrag.current_tenant() AND e.answer_stale),
         'pgkgrag build'),
        (5, 'entities without an embedding',
         (SELECT count(*) FROM kgrag.entity AS e WHERE e.tenant_id = kgrag.current_tenant() AND e.embedding IS NULL),
         'pgkgrag build'),
        (6, 'reports without an embedding',
         (SELECT count(*) FROM kgrag.community_report AS r
           WHERE r.tenant_id = kgrag.current_tenant() AND r.embedding IS NULL),
         'pgkgrag build'),
        (7, 'reports written before a relation of theirs expired or began',
         cardinality(kgrag_private.reports_overtaken()),
         'pgkgrag build')) AS x(o, what, how_many, fix)
 ORDER BY x.o;
GRANT SELECT ON kgrag.staleness TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.staleness IS
'What is stale in the current tenant, one row per kind, with how many and the command that fixes it: stale communities, connected entities in no community (an ingest without a build), stale reports (never served), stale answers, entities and reports without an embedding, reports written before one of their relations expired or began to hold (time passed: the next build writes them again). All zero after pgkgrag build.';
