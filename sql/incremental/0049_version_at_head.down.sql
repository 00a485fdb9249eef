-- 0049_version_at_head down: nothing to undo here. Below 0049 the installer creates kgrag.version()
-- at the end of every run, from sql/idempotent/006_version.sql, with the revision reached, as the
-- drivers of 0006 to 0048 expect (they re-create it only where it exists).
SELECT 1;
