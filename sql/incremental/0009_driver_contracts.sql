-- 0009_driver_contracts: what the driver and SQL share is declared once, in SQL.
--
-- - The default embedder and the language codes of the input become settings (tenant '*'), read
--   by kgrag.use_embedder() and kgrag.text_search_config() instead of constants in Python.
-- - embedded_hash goes: it was written and never read. kgrag.store_embeddings() now checks the
--   hash of the text it is given against the text as it stands, so no column is needed for it.

ALTER TABLE kgrag.entity DROP COLUMN embedded_hash;
ALTER TABLE kgrag.community_report DROP COLUMN embedded_hash;

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'embedder', '"use"',
     'The embedder of a tenant''s vectors (use, hash or openai); questions must be embedded with it. A tenant records its own at its first ingestion and keeps it (kgrag.use_embedder).'),
    ('*', 'language_codes',
     '{"en": "english", "pt": "portuguese", "es": "spanish", "fr": "french", "de": "german", "it": "italian"}',
     'Language codes a document may give (en, pt-BR, ...) and the text search configuration each stands for; a document may also name a configuration directly (kgrag.text_search_config).');
