-- 0047_common_words down: the mark of common words goes.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE kgrag.entity DROP COLUMN common_word';
END
$$;
