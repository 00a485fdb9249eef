-- Graph products built after ingestion: communities (from Leiden run by the driver), their
-- reports (a template map with the chunk behind every claim) and entity answers.

CREATE OR REPLACE VIEW kgrag_private.connected_in_no_community WITH (security_invoker = true) AS
SELECT e.tenant_id, e.entity_id
  FROM kgrag.entity AS e
 WHERE e.degree > 0
   AND NOT EXISTS (SELECT 1 FROM kgrag.community_member AS m
                    WHERE m.tenant_id = e.tenant_id AND m.entity_id = e.entity_id);
GRANT SELECT ON kgrag_private.connected_in_no_community TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag_private.connected_in_no_community IS
'Private. The entities connected to another (degree > 0) that belong to no community: what an ingest leaves until pgkgrag build (an entity linked to none is in no community after a build either). The one definition of the rule, inlined wherever it is read (kgrag.entities.no_community, kgrag.staleness, kgrag_private.communities_outdated, the reason of kgrag_search); every tenant''s rows: the reader names the tenant (a bound value, so Citus reads one shard).';

CREATE OR REPLACE FUNCTION kgrag_private.communities_outdated() RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN EXISTS (SELECT 1 FROM kgrag.community AS c WHERE c.tenant_id = t AND c.stale)
        OR EXISTS (SELECT 1 FROM kgrag_private.connected_in_no_community AS u WHERE u.tenant_id = t);
END
$$;
COMMENT ON FUNCTION kgrag_private.communities_outdated() IS
'Private. Returns true when the communities of the current tenant no longer match its graph: one is stale, or a connected entity belongs to none.';

CREATE OR REPLACE FUNCTION kgrag_private.community_partition()
RETURNS TABLE (entity_id text, level integer, community_id text, stale boolean)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    SELECT m.entity_id, c.level, m.community_id, c.stale
      FROM kgrag.community_member AS m
      JOIN kgrag.community AS c ON c.tenant_id = t AND c.community_id = m.community_id
     WHERE m.tenant_id = t
     ORDER BY m.entity_id COLLATE "C", c.level;
END
$$;
COMMENT ON FUNCTION kgrag_private.community_partition() IS
'Private. Returns the communities of the current tenant the caller sees, member by member: (entity_id, level, community_id, stale = a change reached it since it was detected). Community detection starts from them and keeps those that are not stale (pgkgrag/graph/communities.py).';

CREATE OR REPLACE FUNCTION kgrag_private.delete_communities(ids text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    gone integer;
BEGIN
    -- a community that stays loses its parent before the parent goes: the foreign key cascades,
    -- and would take it, with its report and vector, to be written and embedded again
    UPDATE kgrag.community AS c SET parent_id = NULL
     WHERE c.tenant_id = t AND c.parent_id = ANY (ids) AND NOT c.community_id = ANY (ids);
    DELETE FROM kgrag.community AS c WHERE c.tenant_id = t AND c.community_id = ANY (ids);
    GET DIAGNOSTICS gone = ROW_COUNT;
    RETURN gone;
END
$$;
COMMENT ON FUNCTION kgrag_private.delete_communities(text[]) IS
'Private. Deletes these communities of the current tenant (their members and reports with them) and returns how many; a community below one of them that stays is detached first (parent_id NULL), where the foreign key would take it too. kgrag_private.replace_communities, kgrag.delete_documents and kgrag.set_access delete communities through it.';

CREATE OR REPLACE FUNCTION kgrag_private.community_graph()
RETURNS TABLE (graph text, src text, dst text, weight double precision)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- The shared graph ('') and the graph of each audience the caller sees (its groups, as the ids
    -- are marked: kgrag_private.id_access), apart: communities are detected on each alone, so a
    -- document for an audience never moves a community everyone reads, and a community (with its
    -- report) is one audience's, read by its holders alone.
    RETURN QUERY
    -- (the mark read with built-ins, what kgrag_private.id_access reads: no call per edge)
    SELECT x.graph, x.src, x.dst, x.weight
      FROM (SELECT split_part(split_part(g.src, '~', 2), '@', 1) AS graph, g.src, g.dst, g.weight,
                   split_part(split_part(g.dst, '~', 2), '@', 1) AS other
              FROM kgrag.edge AS g
             WHERE g.tenant_id = t AND g.rel = 'CO_OCCURS' AND g.src < g.dst) AS x
     WHERE x.graph = x.other
     ORDER BY x.graph COLLATE "C", x.src, x.dst;
END
$$;
COMMENT ON FUNCTION kgrag_private.community_graph() IS
'Private. Returns the graphs communities are detected on, each apart: (graph = '''' for the shared graph, else the audience''s groups as kgrag_private.audience_key writes them; src, dst, weight), the current tenant''s co-occurrence edges within one graph (an audience''s entities are marked, kgrag_private.id_access: the caller reads the audiences it sees), each pair once (src < dst), in a fixed order, with weight = chunks citing both. The driver runs hierarchical Leiden on each graph alone (settings community_seed, community_resolution, community_max_size: the same communities for the same graph, whatever the others hold) and stores them together with kgrag_private.replace_communities.';

CREATE OR REPLACE FUNCTION kgrag_private.replace_communities() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n_new integer;
    n_gone integer;
BEGIN
    -- pg_temp.kgrag_stage_cluster(entity_id, level, cluster, parent_cluster) holds Leiden's output.
    -- A community's id is derived from its level and members, so an unchanged community keeps
    -- its id, and its report.
    CREATE TEMP TABLE kgrag_new_community ON COMMIT DROP AS
    WITH members AS (
        SELECT s.level, s.cluster, array_agg(s.entity_id ORDER BY s.entity_id COLLATE "C") AS ids
          FROM pg_temp.kgrag_stage_cluster AS s GROUP BY s.level, s.cluster
    )
    SELECT m.level, m.cluster, m.ids,
           -- (an audience's community is marked as its members are: the policies read the mark)
           'c' || m.level || '-' || left(md5(array_to_string(m.ids, '|')), 12)
           || COALESCE('~' || kgrag_private.audience_key(kgrag_private.id_access(m.ids[1])), '') AS community_id
      FROM members AS m;

    PERFORM kgrag_private.lock_keys('communities', ARRAY['all']);
    n_gone := kgrag_private.delete_communities(ARRAY(
        SELECT c.community_id FROM kgrag.community AS c
         WHERE c.tenant_id = t AND c.community_id NOT IN (SELECT n.community_id FROM pg_temp.kgrag_new_community AS n)));
    INSERT INTO kgrag.community (tenant_id, community_id, level, parent_id, title, size, weight, stale)
    SELECT t, n.community_id, n.level, NULL, '', cardinality(n.ids), 0, false
      FROM pg_temp.kgrag_new_community AS n ORDER BY n.level, n.community_id
    ON CONFLICT (tenant_id, community_id) DO NOTHING;
    GET DIAGNOSTICS n_new = ROW_COUNT;
    -- parents, titles (the three best-connected members) and weights (distinct documents); the
    -- temporary tables are read in CTEs, as Citus joins them with distributed tables only so
    WITH member AS MATERIALIZED (
        SELECT n.community_id, u.entity_id
          FROM pg_temp.kgrag_new_community AS n CROSS JOIN LATERAL unnest(n.ids) AS u(entity_id)
    ), parent AS MATERIALIZED (
        SELECT n.community_id,
               (SELECT pn.community_id FROM pg_temp.kgrag_stage_cluster AS s
                  JOIN pg_temp.kgrag_new_community AS pn ON pn.level = n.level - 1 AND pn.cluster = s.parent_cluster
                 WHERE s.level = n.level AND s.cluster = n.cluster LIMIT 1) AS parent_id
          FROM pg_temp.kgrag_new_community AS n
    ), named AS (
        SELECT r.community_id, string_agg(r.name, ', ' ORDER BY r.degree DESC, r.name COLLATE "C") AS title
          FROM (SELECT mb.community_id, e.name, e.degree,
                       row_number() OVER (PARTITION BY mb.community_id ORDER BY e.degree DESC, e.name COLLATE "C") AS o
                  FROM member AS mb JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = mb.entity_id) AS r
         WHERE r.o <= 3
         GROUP BY r.community_id
    ), weighed AS (
        SELECT mb.community_id, count(DISTINCT k.doc_id) AS weight
          FROM member AS mb
          JOIN kgrag.mention AS m ON m.tenant_id = t AND m.entity_id = mb.entity_id
          JOIN kgrag.chunk AS k ON k.tenant_id = t AND k.chunk_id = m.chunk_id
         GROUP BY mb.community_id
    )
    UPDATE kgrag.community AS c
       SET parent_id = p.parent_id, stale = false, title = nm.title, weight = COALESCE(w.weight, 0)
      FROM parent AS p
      LEFT JOIN named AS nm ON nm.community_id = p.community_id
      LEFT JOIN weighed AS w ON w.community_id = p.community_id
     WHERE c.tenant_id = t AND c.community_id = p.community_id;
    DELETE FROM kgrag.community_member AS m
     WHERE m.tenant_id = t
       -- uncorrelated, so Citus can plan it on its own (and one column: it cannot send a row
       -- comparison to its workers); a community id holds no '|'
       AND m.community_id || '|' || m.entity_id NOT IN (
           SELECT n.community_id || '|' || u.entity_id
             FROM pg_temp.kgrag_new_community AS n CROSS JOIN LATERAL unnest(n.ids) AS u(entity_id));
    INSERT INTO kgrag.community_member (tenant_id, community_id, entity_id)
    SELECT t, n.community_id, u.entity_id
      FROM pg_temp.kgrag_new_community AS n CROSS JOIN LATERAL unnest(n.ids) AS u(entity_id)
     ORDER BY 2, 3
    ON CONFLICT DO NOTHING;
    DROP TABLE pg_temp.kgrag_new_community;
    RETURN jsonb_build_object('communities',
                              (SELECT count(*) FROM kgrag.community AS c WHERE c.tenant_id = t),
                              'new', n_new, 'removed', n_gone);
END
$$;
COMMENT ON FUNCTION kgrag_private.replace_communities() IS
'Private. Replaces the current tenant''s communities with the hierarchical clustering staged in pg_temp.kgrag_stage_cluster(entity_id, level, cluster, parent_cluster). Ids derive from level and members, so unchanged communities (and their reports) stay; a community of an audience''s graph has its id marked as its members'' (kgrag_private.id_access), read by the audience''s holders alone. Only the communities the caller sees are replaced (those of an audience it does not see stay as they are). Returns counts as jsonb.';

CREATE OR REPLACE FUNCTION kgrag_private.refresh_answers() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n integer;
BEGIN
    -- The answer of an entity comes from the document titled with its name when one cites it (its
    -- own page, kgrag.is_page_about: even where the text says "he" and never the name; a title
    -- that is the name before one that qualifies it, "Audrey Williams" before "Audrey Williams
    -- (archaeologist)"): the first sentence there that names it, else that document's first
    -- sentence. Otherwise the first sentence naming it in the chunks citing it; failing that, the
    -- first sentence of its first chunk. The chunk's hash is kept so a changed chunk makes the
    -- answer stale.
    WITH todo AS (
        SELECT e.entity_id, e.name FROM kgrag.entity AS e
         WHERE e.tenant_id = t AND (e.answer IS NULL OR e.answer_stale)
    ), chunks AS (
        SELECT x.*, row_number() OVER (PARTITION BY x.entity_id ORDER BY x.own DESC, x.chunk_id COLLATE "C") AS preference
          FROM (SELECT td.entity_id, c.chunk_id, c.content_hash, c.text,
                       CASE WHEN kgrag.canonical_name(d.title) = kgrag.canonical_name(td.name) THEN 2  -- the title is the name
                            WHEN kgrag.is_page_about(d.title, td.name) THEN 1 ELSE 0 END AS own  -- or qualified
                  FROM todo AS td
                  JOIN kgrag.mention AS m ON m.tenant_id = t AND m.entity_id = td.entity_id
                  JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = m.chunk_id
                  JOIN kgrag.document AS d ON d.tenant_id = t AND d.doc_id = c.doc_id) AS x
    ), chunk_sentences AS MATERIALIZED (
        -- each chunk's sentences split and folded once, however many entities it cites
        SELECT u.chunk_id, s.pos, btrim(s.sentence) AS sentence, ' ' || kgrag.canonical_name(s.sentence) || ' ' AS folded
          FROM (SELECT DISTINCT ch.chunk_id, ch.text FROM chunks AS ch WHERE ch.preference <= 20) AS u
         CROSS JOIN LATERAL regexp_split_to_table(u.text, '(?<=[.!?])\s+') WITH ORDINALITY AS s(sentence, pos)
         WHERE btrim(s.sentence) <> ''
    ), sentences AS (
        SELECT ch.entity_id, ch.chunk_id, ch.content_hash, ch.own, ch.preference, cs.pos, cs.sentence,
               -- (on the alias index: a subquery over a CTE of the entities scans all of them per row)
               EXISTS (SELECT 1 FROM kgrag.alias AS a
                        WHERE a.tenant_id = t AND a.entity_id = ch.entity_id AND a.alias_fold <> ''
                          AND strpos(cs.folded, ' ' || a.alias_fold || ' ') > 0) AS names_it,
               -- the sentence states a relation of the entity that a curator rejected (its quote):
               -- a rumour is no answer while anything else names it
               EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r  -- (relation_evidence_chunk_idx)
                        WHERE r.tenant_id = t AND r.chunk_id = ch.chunk_id AND r.quote <> ''
                          AND (r.src = ch.entity_id OR r.dst = ch.entity_id)
                          AND (strpos(cs.sentence, r.quote) > 0 OR strpos(r.quote, cs.sentence) > 0)  -- (or it spans it)
                          AND (SELECT c.kind = 'reject_relation' FROM kgrag.curation AS c
                                WHERE c.tenant_id = t AND c.target = kgrag_private.relation_target(r.src, r.rel, r.dst)
                                  AND c.kind IN ('reject_relation', 'approve', 'correct_relation')
                                ORDER BY c.decided_at DESC LIMIT 1)) AS rejected
          FROM chunks AS ch
          JOIN chunk_sentences AS cs ON cs.chunk_id = ch.chunk_id
         WHERE ch.preference <= 20
    ), best AS (
        SELECT DISTINCT ON (x.entity_id) x.entity_id, x.chunk_id, x.content_hash, x.sentence
          FROM sentences AS x
         ORDER BY x.entity_id, x.rejected, x.own DESC, x.names_it DESC, x.preference, x.pos
    )
    UPDATE kgrag.entity AS e
       SET answer = b.answer, answer_chunk_id = b.chunk_id, answer_hash = b.content_hash, answer_stale = false,
           -- the answer a person saw before (noted when it changed, kept until approved; the old
           -- values of e here), forgotten when the same answer comes back
           answer_before = NULLIF(COALESCE(e.answer_before, CASE WHEN e.answer_chunk_id IS NOT NULL THEN e.answer END), b.answer),
           answer_before_doc = CASE WHEN COALESCE(e.answer_before, CASE WHEN e.answer_chunk_id IS NOT NULL THEN e.answer END)
                                         IS DISTINCT FROM b.answer
                                    THEN COALESCE(e.answer_before_doc, regexp_replace(e.answer_chunk_id, '#[0-9]+$', '')) END
      FROM (SELECT x.entity_id, x.chunk_id, x.content_hash, left(regexp_replace(x.sentence, '\s+', ' ', 'g'), 400) AS answer
              FROM best AS x) AS b
     WHERE e.tenant_id = t AND e.entity_id = b.entity_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- a change a person approved (kgrag.approve on its review item) is the answer they saw now
    UPDATE kgrag.entity AS e SET answer_before = NULL, answer_before_doc = NULL
      FROM (SELECT DISTINCT substring(c.target FROM '^answer:(.*)@[0-9a-f]{8}$') AS entity_id, c.target
              FROM kgrag.curation AS c
             WHERE c.tenant_id = t AND c.kind = 'approve' AND c.target LIKE 'answer:%') AS a
     WHERE e.tenant_id = t AND e.entity_id = a.entity_id AND e.answer_before IS NOT NULL
       AND kgrag_private.answer_target(e.entity_id, e.answer_before, e.answer) = a.target;
    RETURN n;
END
$$;
COMMENT ON FUNCTION kgrag_private.refresh_answers() IS
'Private. Writes a short answer for every entity of the current tenant that has none or a stale one, with its chunk''s id and hash (a sentence holding the quote of a relation of the entity a curator rejected comes last, whatever its place): from a citing document titled with the entity''s name (its own page), the first sentence there naming it, else that document''s first sentence; otherwise the first sentence naming it in the chunks that cite it (or the first sentence of its first chunk). Notes the answer a person saw before a change (answer_before, until a person approves the new one: kgrag.review_queue, item answer_changed) and forgets it when the same answer comes back. Returns the number of answers written.';

CREATE OR REPLACE FUNCTION kgrag_private.reports_overtaken() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- a relation of a member began or ceased to hold between the report's writing and now
    RETURN ARRAY(SELECT r.community_id FROM kgrag.community_report AS r
                  WHERE r.tenant_id = t
                    AND EXISTS (SELECT 1 FROM kgrag.community_member AS cm
                                  JOIN kgrag.edge AS g ON g.tenant_id = t AND g.src = cm.entity_id
                                 WHERE cm.tenant_id = t AND cm.community_id = r.community_id AND g.rel <> 'CO_OCCURS'
                                   AND (g.valid_to > r.generated_at AND g.valid_to <= now()
                                        OR g.valid_from > r.generated_at AND g.valid_from <= now()))
                  ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.reports_overtaken() IS
'Private. Returns the communities (ids, sorted) of the current tenant whose report was written before a relation of one of its members expired or began to hold (valid_to or valid_from between the report''s generated_at and now): time has made what it states old, and the next build writes it again (kgrag.staleness counts them).';

CREATE OR REPLACE FUNCTION kgrag_private.refresh_reports() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    evidence_n integer := kgrag.setting('report_evidence_chunks')::integer;
    written integer;
    kept integer;
    overtaken text[];
BEGIN
    -- The template report: the subjects of the community with what the corpus says about each
    -- (their answers) and the relations between them, each claim with the chunk behind it.
    -- Its evidence is the chunks that cite the most members.
    CREATE TEMP TABLE kgrag_report ON COMMIT DROP AS
    WITH evidence AS (
        SELECT c.community_id,
               ARRAY(SELECT x.chunk_id FROM (
                        SELECT m.chunk_id, count(DISTINCT m.entity_id) AS cited
                          FROM kgrag.community_member AS cm
                          JOIN kgrag.mention AS m ON m.tenant_id = t AND m.entity_id = cm.entity_id
                         WHERE cm.tenant_id = t AND cm.community_id = c.community_id
                         GROUP BY m.chunk_id
                         ORDER BY cited DESC, m.chunk_id COLLATE "C" LIMIT evidence_n) AS x) AS chunk_ids
          FROM kgrag.community AS c WHERE c.tenant_id = t
    ), subjects AS (
        SELECT cm.community_id,
               string_agg('- ' || e.name || ' (' || e.type || ')'
                          || COALESCE(': ' || e.answer || ' [' || e.answer_chunk_id || ']', ''),
                          E'\n' ORDER BY e.degree DESC, e.name COLLATE "C", e.entity_id COLLATE "C") AS lines,
               count(*) AS n
          FROM kgrag.community_member AS cm
          JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = cm.entity_id
         WHERE cm.tenant_id = t
         GROUP BY cm.community_id
    ), typed AS MATERIALIZED (
        -- the typed edges with each community of their source, first: joined the other way round
        -- (every pair of members of a community, then its edge) a big community costs the square
        -- of its size, and right after the communities are replaced the planner knows no sizes
        -- (the relations that hold now, with their dates where they have them: a report states the
        -- current facts; kgrag.staleness counts the reports one has expired in since)
        SELECT cm.community_id, g.src, g.dst, g.rel, g.weight, g.evidence_quote, g.evidence_chunk_id,
               kgrag_private.validity_note(jsonb_build_object('valid_from', g.valid_from, 'valid_to', g.valid_to)) AS dates
          FROM kgrag.edge AS g
          JOIN kgrag.community_member AS cm ON cm.tenant_id = t AND cm.entity_id = g.src
         WHERE g.tenant_id = t AND g.rel <> 'CO_OCCURS'
           AND (g.valid_from IS NULL OR g.valid_from <= now()) AND (g.valid_to IS NULL OR g.valid_to > now())
    ), relations AS (
        SELECT g.community_id,
               string_agg('- ' || s.name || ' ' || g.rel || ' ' || d.name || g.dates
                          || COALESCE(': "' || g.evidence_quote || '"', '')
                          || COALESCE(' [' || g.evidence_chunk_id || ']', ''),
                          -- a total order: the same graph writes the same report, whatever the history
                          E'\n' ORDER BY g.weight DESC, s.name COLLATE "C", d.name COLLATE "C", g.rel COLLATE "C",
                                        g.src COLLATE "C", g.dst COLLATE "C") AS lines
          FROM typed AS g
          JOIN kgrag.entity AS s ON s.tenant_id = t AND s.entity_id = g.src
          JOIN kgrag.entity AS d ON d.tenant_id = t AND d.entity_id = g.dst
         WHERE EXISTS (SELECT 1 FROM kgrag.community_member AS cd
                        WHERE cd.tenant_id = t AND cd.community_id = g.community_id AND cd.entity_id = g.dst)
         GROUP BY g.community_id
    )
    SELECT c.community_id, c.title, c.weight, ev.chunk_ids,
           c.title || E'\n' || sj.n || ' subjects, cited by ' || c.weight || ' documents.' || E'\n'
           || E'Subjects:\n' || sj.lines
           || COALESCE(E'\nRelations:\n' || rl.lines, '')
           || E'\nEvidence: ' || array_to_string(ev.chunk_ids, ', ') AS report
      FROM kgrag.community AS c
      JOIN subjects AS sj ON sj.community_id = c.community_id
      JOIN evidence AS ev ON ev.community_id = c.community_id
      LEFT JOIN relations AS rl ON rl.community_id = c.community_id
     WHERE c.tenant_id = t;

    -- A report is rewritten only when what it says changed; otherwise it just stops being stale
    -- (and one that time overtook is checked as of now).
    overtaken := kgrag_private.reports_overtaken();
    UPDATE kgrag.community_report AS r SET stale = false
      FROM pg_temp.kgrag_report AS n
     WHERE r.tenant_id = t AND r.community_id = n.community_id AND r.generated_hash = md5(n.report) AND r.stale;
    UPDATE kgrag.community_report AS r SET generated_at = now()  -- (Citus: no now() inside a CASE)
      FROM pg_temp.kgrag_report AS n
     WHERE r.tenant_id = t AND r.community_id = n.community_id AND r.generated_hash = md5(n.report)
       AND r.community_id = ANY (overtaken);
    INSERT INTO kgrag.community_report AS r (tenant_id, community_id, title, report, evidence_chunk_ids, weight,
                                             generator, generated_hash, stale, generated_at)
    SELECT t, n.community_id, n.title, n.report, n.chunk_ids, n.weight, 'template', md5(n.report), false, now()
      FROM pg_temp.kgrag_report AS n ORDER BY n.community_id
    ON CONFLICT (tenant_id, community_id) DO UPDATE
       SET title = excluded.title, report = excluded.report, evidence_chunk_ids = excluded.evidence_chunk_ids,
           weight = excluded.weight, generator = excluded.generator, generated_hash = excluded.generated_hash,
           stale = false, generated_at = excluded.generated_at,
           -- the vector is of the report's head (kgrag.report_embedding_text): a change past it
           -- (a subject far down the list, a relation, the evidence) keeps it, with no model run
           embedding = CASE WHEN kgrag.report_embedding_text(excluded.report) = kgrag.report_embedding_text(r.report)
                            THEN r.embedding END,
           quantized = CASE WHEN kgrag.report_embedding_text(excluded.report) = kgrag.report_embedding_text(r.report)
                            THEN r.quantized END
     WHERE r.generated_hash <> excluded.generated_hash;
    GET DIAGNOSTICS written = ROW_COUNT;
    DROP TABLE pg_temp.kgrag_report;
    SELECT count(*) INTO kept FROM kgrag.community_report AS r WHERE r.tenant_id = t;
    RETURN jsonb_build_object('reports', kept, 'written', written);
END
$$;
COMMENT ON FUNCTION kgrag_private.refresh_reports() IS
'Private. Writes the template report of every community of the current tenant whose content changed (or that has none): subjects with their answers and the relations between them, each with its chunk id, and evidence_chunk_ids = the chunks citing the most members. Unchanged reports are kept; a rewritten report keeps its vector when the text it is embedded from (kgrag.report_embedding_text) is unchanged. Returns counts as jsonb.';

CREATE OR REPLACE FUNCTION kgrag_private.set_report_text(community_id text, report text, generator text) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    template text;
    summary text := regexp_replace(COALESCE(report, ''), '^\s+|\s+$', '', 'g');  -- spaces, newlines, tabs
    cited text[] := ARRAY(SELECT DISTINCT m[1] FROM regexp_matches(summary, '\[([^\[\]\s]+#\d+)\]', 'g') AS m);
BEGIN
    SELECT r.report INTO template FROM kgrag.community_report AS r
     WHERE r.tenant_id = t AND r.community_id = set_report_text.community_id AND r.generator = 'template'
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'no template report to replace';
    ELSIF summary = '' THEN
        RETURN 'empty summary';
    ELSIF cardinality(cited) = 0 THEN
        RETURN 'summary cites no chunk';
    ELSIF EXISTS (SELECT 1 FROM unnest(cited) AS c(id)
                   WHERE c.id NOT IN (SELECT m[1] FROM regexp_matches(template, '([^\s,\[\]]+#\d+)', 'g') AS m)) THEN
        RETURN 'summary cites a chunk the report does not';
    END IF;
    UPDATE kgrag.community_report AS r
       SET report = summary, generator = set_report_text.generator, embedding = NULL, quantized = NULL
     WHERE r.tenant_id = t AND r.community_id = set_report_text.community_id;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION kgrag_private.set_report_text(text, text, text) IS
'Private. Replaces the template text of a community report with a rewritten one (an LLM summary) and records who wrote it, when the summary keeps to the template''s evidence: not empty, citing at least one chunk as [chunk_id], and only chunks the template cites. Returns NULL when it replaced the text, else why not (no template report to replace, empty summary, summary cites no chunk, summary cites a chunk the report does not). The report keeps its generated_hash, so it is regenerated only when its community changes.';

CREATE OR REPLACE FUNCTION kgrag_private.template_reports()
RETURNS TABLE (community_id text, report text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    SELECT r.community_id, r.report FROM kgrag.community_report AS r
     WHERE r.tenant_id = t AND r.generator = 'template'
     ORDER BY r.community_id;
END
$$;
COMMENT ON FUNCTION kgrag_private.template_reports() IS
'Private. Returns the current tenant''s community reports still in their template form: (community_id, report). An LLM may rewrite them (kgrag_private.set_report_text), keeping their chunk citations.';
