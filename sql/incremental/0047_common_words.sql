-- 0047_common_words: an entity whose one-word name the tenant's documents also write as a plain
-- lowercase word ("History" beside "the history of ..."), marked by the build
-- (kgrag.refresh_common_words): linked from a question's word only where the question capitalizes
-- it, and ranked below named entities. No data changes: every entity starts unmarked.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'ALTER TABLE kgrag.entity ADD COLUMN common_word boolean NOT NULL DEFAULT false';
    EXECUTE $q$COMMENT ON COLUMN kgrag.entity.common_word IS
'Whether the entity''s one-word name is a common word of the tenant''s documents: another chunk writes it as a plain lowercase word (kgrag.refresh_common_words, run by pgkgrag build). A question''s word links such an entity only where the question capitalizes it, and the local route ranks it below named entities.'$q$;
END
$$;
