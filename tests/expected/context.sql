-- The context an LLM gets, by the question's text alone: the packed blocks within the budget.
\pset format unaligned
\pset fieldsep ' | '
BEGIN;
SELECT kgrag.use_tenant('demo') IS NOT NULL AS acting;
SELECT block, kind, ref_id, chars
  FROM kgrag.context_blocks(question => 'Who approves changes to the PayFlow contract?', max_chars => 1200, k => 5);
SELECT kgrag.context(question => 'Who approves changes to the PayFlow contract?', max_chars => 400, k => 3);
ROLLBACK;
