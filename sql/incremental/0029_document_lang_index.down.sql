-- 0029_document_lang_index down: lexical search scans the documents for their languages again.

-- (through EXECUTE, for Citus: see 0021_edge_rank_index.sql)
DO $$
BEGIN
    EXECUTE 'DROP INDEX kgrag.document_lang_idx';
END
$$;
