-- The router on the sample corpus, by the question's text alone (no vector: nothing depends on an
-- embedder): the route, the rule that decided, the seeds and the reason.
\pset format unaligned
\pset fieldsep ' | '
BEGIN;
SELECT kgrag.use_tenant('demo') IS NOT NULL AS acting;
SELECT route, rule_id, seeds, reason FROM kgrag.route(question => 'What does the Auth Service depend on?');
SELECT route, rule_id, seeds, reason FROM kgrag.route(question => 'O que o serviço de autenticação precisa?');
SELECT route, rule_id, seeds, reason FROM kgrag.route(question => 'What are the main themes across the documents?');
SELECT route, rule_id, seeds, reason FROM kgrag.route(question => 'Quais são os principais temas do acervo?');
SELECT route, rule_id, seeds, reason FROM kgrag.route(question => 'Tell me about the Payment Gateway in general');
SELECT route, rule_id, seeds, reason FROM kgrag.route(question => 'How do I bake a carrot cake?');
SELECT route, rule_id, seeds, reason FROM kgrag.route(question => 'Who signs the PayFlow contract?', options => '{"seeds": 1}');
ROLLBACK;
