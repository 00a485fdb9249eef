-- 0049_version_at_head down: nothing to undo. Below head kgrag.version() is absent with the rest of
-- sql/idempotent; a driver of 0048 re-creates it at the end of its first run.
SELECT 1;
