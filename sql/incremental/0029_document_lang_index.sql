-- 0029_document_lang_index: the languages of a tenant's documents, read from an index.
--
-- Lexical search searches each chunk in its own language's text search configuration, so it
-- first asks which languages the tenant's documents are in. That was a scan of every document of
-- the tenant, in every search: 1.3-1.7 ms at 25,000 chunks a tenant (benchmarks/scale.py's
-- corpus, 100k chunks over 4 tenants), growing with the documents. With this index the question
-- is a skip scan, one index probe per language (0.3 ms there, whatever the documents).
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'CREATE INDEX document_lang_idx ON kgrag.document (tenant_id, lang)';
END
$$;
