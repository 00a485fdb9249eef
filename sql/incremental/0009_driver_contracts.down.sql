-- 0009_driver_contracts down: the settings go, the columns come back (empty).

DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key IN ('embedder', 'language_codes');
ALTER TABLE kgrag.community_report ADD COLUMN embedded_hash text;
ALTER TABLE kgrag.entity ADD COLUMN embedded_hash text;
