-- Every route on the sample corpus, by the question's text alone: each row's rank, kind, id,
-- source and score (to 4 places), and the reason once per search.
\pset format unaligned
\pset fieldsep ' | '
BEGIN;
SELECT kgrag.use_tenant('demo') IS NOT NULL AS acting;
SELECT rank, kind, ref_id, source, round(score::numeric, 4) AS score
  FROM kgrag.kgrag_search(question => 'What does the Auth Service depend on?', route => 'local', k => 4);
SELECT reason FROM kgrag.last_search();
SELECT rank, kind, ref_id, source, round(score::numeric, 4) AS score, payload ->> 'via' AS via
  FROM kgrag.kgrag_search(question => 'What are the main themes across the documents?', route => 'global', k => 3);
SELECT reason, reports FROM kgrag.last_search();
SELECT rank, kind, ref_id, source, round(score::numeric, 4) AS score
  FROM kgrag.kgrag_search(question => 'Tell me about the Payment Gateway in general', route => 'mixed', k => 3);
SELECT reason FROM kgrag.last_search();
SELECT rank, kind, ref_id, source, round(score::numeric, 4) AS score
  FROM kgrag.kgrag_search(question => 'deploy rollback policy', route => 'vector', k => 3);
SELECT reason FROM kgrag.last_search();
SELECT count(*) AS rows FROM kgrag.kgrag_search(question => 'How do I bake a carrot cake?');
SELECT route, reason FROM kgrag.last_search();
ROLLBACK;
